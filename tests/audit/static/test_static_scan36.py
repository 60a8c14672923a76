"""The evidence phase's tree-wide searches are memoized for the pass (scan36): ``def`` lookups per
reader index, the emptied-parameter search of :func:`.platforms.source_dropped` per module."""

from __future__ import annotations

from derivgraph.audit.static import platforms
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


class _CountedTree(dict):
    """A display path -> text tree, counting the passes over its files."""

    passes = 0

    def items(self):
        self.passes += 1
        return super().items()


def test_source_dropped_searches_the_tree_once_per_module_with_the_pass_memo():
    tree = _CountedTree({"a.py": "x = 1\n", "b.py": "self.proj.weight = torch.empty(0, 4)\n"})
    allocates: dict[str, bool] = {}
    emptied: dict[str, str | None] = {}
    answers = {platforms.source_dropped(chain, "", tree, allocates=allocates, emptied=emptied)
               for chain in ("self.proj.weight", "layer.proj.weight", "self.proj")}
    assert len(answers) == 1
    (answer,) = answers
    assert answer is not None and "`proj`'s parameter is emptied at b.py:1" in answer
    assert tree.passes == 1 and set(emptied) == {"proj"}
    assert platforms.source_dropped("self.other.weight", "", tree, allocates=allocates,
                                    emptied=emptied) is None
    assert tree.passes == 2 and emptied["other"] is None
    platforms.source_dropped("self.proj.weight", "", tree)  # without the memo: a fresh search
    assert tree.passes == 3
