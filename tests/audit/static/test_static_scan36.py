"""The evidence phase's tree-wide ``def`` lookups are memoized per reader index (scan36)."""

from __future__ import annotations

from derivgraph.audit.static.config_reader import tree_def_text
from derivgraph.audit.static.readers import ReaderIndex


class _CountedFiles(list):
    """The index's files, counting the passes over them."""

    passes = 0

    def __iter__(self):
        self.passes += 1
        return super().__iter__()


_FILES = [
    ("a.py", "class C:\n    def make_cfg(self):\n        return 1\n"),
    ("b.py", "import x\n\ndef make_cfg(layer):\n    return Cfg(w=layer.w)\n\nY = 2\n"),
    ("c.py", "def make_cfg(other):\n    return None\n"),
]


def _index(files: list[tuple[str, str]]) -> ReaderIndex:
    return ReaderIndex(files, (), lambda c: frozenset({c}))


def test_first_definition_in_file_order_at_the_indent_asked():
    index = _index(list(_FILES))
    assert tree_def_text(index, "make_cfg") == "    def make_cfg(self):\n        return 1\n"
    assert tree_def_text(index, "make_cfg", "") == (
        "def make_cfg(layer):\n    return Cfg(w=layer.w)\n\n")
    assert tree_def_text(index, "absent") == ""


def test_one_pass_over_the_tree_per_name_and_indent():
    files = _CountedFiles(_FILES)
    index = _index(files)
    for _ in range(5):
        assert tree_def_text(index, "make_cfg", "").startswith("def make_cfg(layer)")
    assert files.passes == 1
    tree_def_text(index, "make_cfg")
    tree_def_text(index, "make_cfg")
    assert files.passes == 2
