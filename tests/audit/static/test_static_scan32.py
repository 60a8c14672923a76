"""scan32 (issue 21, the scan's CPU): work the evidence phase no longer repeats.

* The reads of every finding's attribute are searched once, before the judging workers fork
  (:func:`.evidence._judge_all`), instead of once per worker over nearly the same files: a
  name's reads must not depend on the names searched with it.
* The tree facts of a file (:func:`.tree_facts.file_facts`) take its class statements and its
  module-level tensor functions from the index's pass over the text (:func:`.index.scan_file`),
  not from two more scans: the same lists as ba2b206's scans (kept here as the reference) on
  every file of vLLM 0.33.0 and on edge cases.
* :func:`.bound_classes.bound_classes` walks a class's nodes once per (module, class) (the
  ``bound bindings`` memo of the reader index) for its three searches, instead of three walks
  per finding; a memo keyed without the class would hand one class's bindings to another.

Each rule has a canary that plants the wrong behaviour back and sees the test go red.
"""

from __future__ import annotations

import re

from derivgraph.audit.static import evidence
from derivgraph.audit.static import index as index_mod
from derivgraph.audit.static.index import DEF_HEADER_END, scan_file
from derivgraph.audit.static.readers import ReaderIndex
from derivgraph.audit.static.sources import collect_files
from derivgraph.audit.static.tree_facts import file_facts
from tests.audit.static.test_static_bound_classes import _ATTRS, _FAST, _bound, _readers
from tests.audit.static.test_static_bound_classes import _FILES as _BOUND_FILES

_FILES = [
    ("a.py", "class A:\n    def f(self):\n        return op(self.w, self.w_scale)\n"
             "    def g(self):\n        self.w = 1\n        x = getattr(self, 'w_scale')\n"),
    ("b.py", "class B:\n    def h(self):\n        y = self.w_scale.t()\n"
             "        return getattr(layer, \"w\", None)\n"),
    ("c.py", "def k(m):\n    return m.w_scale2 + m.w\n"),
    ("d.py", "def unrelated(m):\n    return m.other\n"),
]
_NAMES = ["w", "w_scale", "w_scale2", "other"]


def _hits(index: ReaderIndex, name: str) -> list[tuple[int, int, str | None, str]]:
    return [(h.file, h.line, h.cls, h.text) for h in index._hits.get(name, [])]


def _each_alone() -> dict[str, list[tuple[int, int, str | None, str]]]:
    out = {}
    for name in _NAMES:
        index = ReaderIndex(_FILES, (), lambda c: frozenset({c}))
        index.prefetch([name])
        out[name] = _hits(index, name)
    return out


def test_a_names_reads_are_the_same_searched_alone_or_with_the_others():
    together = ReaderIndex(_FILES, (), lambda c: frozenset({c}))
    together.prefetch(_NAMES)
    alone = _each_alone()
    assert {n: _hits(together, n) for n in _NAMES} == alone
    # real values: ``.w`` is read in a.py (line 3), c.py and by getattr in b.py; its store on
    # line 5 of a.py is not a read
    assert [(f, line) for f, line, _, _ in alone["w"]] == [(0, 3), (1, 4), (2, 2)]
    assert [(f, line) for f, line, _, _ in alone["w_scale"]] == [(0, 3), (0, 6), (1, 3)]


def test_canary_a_search_over_the_first_names_files_only_goes_red(monkeypatch):
    """A planted search that reads only the files naming its first name (a table keyed by
    the wrong name) loses reads when names are searched together."""
    real = ReaderIndex._word_files

    def first_only(self):
        where = real(self)
        first = sorted(n for n in _NAMES if n not in self._hits or self._hits[n] == [])[0]
        return {n: where.get(first, []) for n in where}

    together = ReaderIndex(_FILES, (), lambda c: frozenset({c}))
    monkeypatch.setattr(ReaderIndex, "_word_files", first_only)
    together.prefetch(_NAMES)
    monkeypatch.undo()
    assert {n: _hits(together, n) for n in _NAMES} != _each_alone()


def test_every_findings_reads_are_searched_before_the_workers_start(monkeypatch):
    index = ReaderIndex(_FILES, (), lambda c: frozenset({c}))
    todo = [type("F", (), {"attr": n, "file": "a.py"})() for n in ("w", "w_scale")]
    seen: list[set[str]] = []

    def chunks(work, total, jobs, size):
        seen.append(set(index._hits))  # what the workers inherit
        yield list(range(total)), work(list(range(total)))

    monkeypatch.setattr(evidence, "forked_chunks", chunks)
    out = evidence._judge_all(lambda f: f, index, todo, jobs=2)
    assert out == todo
    assert seen and {"w", "w_scale"} <= seen[0]
    assert _hits(index, "w") == _each_alone()["w"]


def test_the_bound_nodes_memo_keeps_each_class_apart():
    """Several classes of one module (bound_cases.py) bind their experts classes apart: each
    still gets its own reader with the nodes memoized (evid29's expectations)."""
    got = _bound()
    assert got["bnd_own_config"][0] != _FAST
    assert got["bnd_slow_config"][0] != got["bnd_default_config"][0]


def test_canary_a_bound_bindings_memo_keyed_without_the_class_goes_red(monkeypatch):
    real = ReaderIndex.memo

    def by_module_only(self, key, make):
        if key.startswith("bound bindings "):
            key = key.rsplit(" ", 1)[0]  # the planted bug: one entry per module
        return real(self, key, make)

    monkeypatch.setattr(ReaderIndex, "memo", by_module_only)
    got = {a: r[0] for a, r in _readers(_BOUND_FILES, _ATTRS).items()}
    monkeypatch.undo()
    right = {a: r[0] for a, r in _bound().items()}
    assert got != right


# ---- one pass for the tree facts --------------------------------------------------------------
# The former text scans of ba2b206 (``scope.regex_classes`` and ``tree_facts.tensor_functions``),
# kept here verbatim as the reference the one pass (:func:`.index.scan_file`) must equal.

_FORMER_CLASS_RE = re.compile(r"class[ \t]+(\w+)[ \t]*(?:\(((?:[^()]|\([^()]*\))*)\))?[ \t]*:")
_FORMER_DEF_RE = re.compile(r"def[ \t]+(\w+)[ \t]*\(")
_FORMER_TENSOR_WORD_RE = re.compile(r"Tensor|Parameter|Buffer")


def _former_classes(text: str) -> list[tuple[str, list[str]]]:
    out = []
    for m in _FORMER_CLASS_RE.finditer(text):
        line_start = text.rfind("\n", 0, m.start()) + 1
        if text[line_start:m.start()].strip(" \t"):
            continue
        bases = []
        for raw in (m.group(2) or "").split(","):
            raw = raw.strip()
            if not raw or "=" in raw or raw.startswith("*"):
                continue
            raw = raw.split("[", 1)[0].strip()
            bases.append(raw.rsplit(".", 1)[-1])
        out.append((m.group(1), bases))
    return out


def _former_tensor_functions(text: str) -> list[tuple[str, str]]:
    if "Tensor" not in text and "Parameter" not in text:
        return []
    out = []
    for m in _FORMER_DEF_RE.finditer(text):
        start = m.start()
        if start and text[start - 1] != "\n" and not (
                start >= 6 and text[start - 6:start] == "async " and
                (start == 6 or text[start - 7] == "\n")):
            continue
        end = DEF_HEADER_END.search(text, m.end())
        if end and end.group(1) and _FORMER_TENSOR_WORD_RE.search(end.group(1)):
            out.append((m.group(1), " ".join(end.group(1).split())))
    return out


_EDGES = (
    "import torch\n"
    "def f(x) -> torch.Tensor:\n    return x\n"
    "async def g(x) -> nn.Parameter:\n    return x\n"
    "async  def two_spaces(x) -> torch.Tensor:\n    return x\n"
    " async def indented(x) -> torch.Tensor:\n    return x\n"
    "class Outer(mod.Base[T], Mixin, metaclass=M):\n"
    "    class Inner(Outer):\n"
    "        def m(self) -> torch.Tensor:\n            return x\n"
    "x = 'a class Fake(B): in a line'\n"
    "def h(\n    x,\n) -> tuple[\n    torch.Tensor,\n    int]:\n    return x, 1\n"
)
_BUFFER_ONLY = "def b(x) -> Buffer:\n    return x\n"  # neither Tensor nor Parameter named


def _vllm_texts() -> list[tuple[str, str]]:
    return [(src.module, src.path.read_text(encoding="utf-8"))
            for src in collect_files((), "vllm")]


def test_one_pass_gives_the_former_classes_and_tensor_functions():
    texts = [("edges", _EDGES), ("buffer", _BUFFER_ONLY), *_vllm_texts()]
    assert len(texts) > 3000
    for i, (module, text) in enumerate(texts):
        found = scan_file(i, module, text)
        assert found.classes == _former_classes(text), module
        assert found.tensor_functions == _former_tensor_functions(text), module
        assert file_facts(i, module, text).classes == found.classes
    edges = scan_file(0, "edges", _EDGES)
    assert edges.classes == [("Outer", ["Base", "Mixin"]), ("Inner", ["Outer"])]
    assert edges.tensor_functions == [("f", "torch.Tensor"), ("g", "nn.Parameter"),
                                      ("h", "tuple[ torch.Tensor, int]")]
    assert scan_file(1, "buffer", _BUFFER_ONLY).tensor_functions == []


def test_canary_an_indent_test_for_module_level_functions_goes_red(monkeypatch):
    """A planted module-level test that reads the index's indent (``async  def`` and an
    indented ``async def`` count as module-level there) differs from the former scan."""
    monkeypatch.setattr(index_mod, "_module_level_def",
                        lambda text, start: index_mod._indent(text, start) == "")
    assert scan_file(0, "edges", _EDGES).tensor_functions != _former_tensor_functions(_EDGES)
