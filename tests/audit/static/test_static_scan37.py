"""scan37's faster text searches: each finds what the search it replaced found (the whole
vLLM tree and standard library: ``benchmarks/results/scan37/text_readers_same.py``)."""

from __future__ import annotations

import re

import pytest

from derivgraph.audit.static import index, platforms, segments
from derivgraph.audit.static.alternation import words_pattern
from derivgraph.audit.static.computed_after_load import computed_after_load
from derivgraph.audit.static.handed_reader import handed_reader
from derivgraph.audit.static.readers import ReaderIndex

_WORDS = ["a", "ab", "abc", "b", "w13_weight", "w13_weight_scale", "w2_weight", "x.y"]


def test_words_pattern_matches_exactly_the_words() -> None:
    trie = re.compile(words_pattern(_WORDS))
    for word in _WORDS:
        assert trie.fullmatch(word)
    for other in ["", "abcd", "w13_", "w13_weight_", "xzy", "ba", "w2"]:
        assert not trie.fullmatch(other)
    assert words_pattern(["w13_weight", "w13_weight_scale", ""]) == r"w13_weight(?:_scale)?"


def test_words_pattern_before_a_word_end_finds_what_the_alternation_finds() -> None:
    text = "l.ab + l.abc(l.a) - l.w13_weight_scale, l.w13_weights l.x.y l.b_ l.w2_weight"
    plain = re.compile(rf"\.({'|'.join(map(re.escape, _WORDS))})\b")
    trie = re.compile(rf"\.({words_pattern(_WORDS)})\b")
    found = [(m.start(), m.group(1)) for m in trie.finditer(text)]
    assert found == [(m.start(), m.group(1)) for m in plain.finditer(text)]
    assert [w for _, w in found] == ["ab", "abc", "a", "w13_weight_scale", "x.y", "w2_weight"]


def test_same_file_calls_in_order_not_on_an_object() -> None:
    text = "f(x) + g (y)\n h.i(z); j.k.l( m(\nn\t( _p(q) 2(r) é(s)"
    assert segments._name_calls(text) == ["f", "g", "m", "n", "_p", "2", "é"]
    old = re.compile(r"(?<![\w.])(\w+)\s*\(")
    assert segments._name_calls(text) == old.findall(text)


def test_self_calls_on_self_cls_and_super_only() -> None:
    text = "self.a() myself.b() cls.c (x) super().d() x.super().e() self .f() clsx.g() self.h.i()"
    assert segments._SELF_CALL.findall(text) == ["a", "c", "d", "e"]
    old = re.compile(r"\b(?:self|cls|super\(\))\.(\w+)\s*\(")
    assert segments._SELF_CALL.findall(text) == old.findall(text)


@pytest.mark.parametrize("text", [
    "import x\n\nclass A:\n    pass\n# c\n)\ndef f():\n    return 1\n",
    "  indented first\nx = 1\n",
    "# comment first\n@dec\ndef g():\n    pass\n\u2028y = 2\n",
    ")closing first\nz = 3",
    "",
])
def test_split_blocks_cuts_at_the_lines_that_start_in_column_0(text: str) -> None:
    col0 = re.compile(r"^(?=[^\s#)\]}])", re.M)
    starts = [b.start for b in segments.split_blocks(text)]
    assert starts == [m.start() for m in col0.finditer(text)][:len(starts)]
    assert starts[:1] == ([0] if text[:1] not in ("", " ", "#", ")") else starts[:1])


def test_method_indents_take_the_whole_indent_of_each_def_line() -> None:
    source = ("class A:\n    x = 1\n    def f(self):\n        def inner():\n            pass\n"
              "    async  def g(self):\n\tdef t(self): pass\n    deff = 2\n")
    lines = source.splitlines(keepends=True)
    assert segments._method_indents(source, lines) == ["    ", "        ", "    ", "\t"]


@pytest.mark.parametrize(("text", "found"), [
    ("x = torch.empty(0, 3)", True), ("x = zeros((0, 4))", True), ("x = new_empty( 0)", True),
    ("x = torch.empty(1)", False), ("x = zeros(0.5)", False), ("empty (0)", False),
])
def test_placeholder_hint_finds_a_0_element_allocation(text: str, found: bool) -> None:
    assert (index._PLACEHOLDER_HINT.search(text) is not None) is found
    old = re.compile(r"(?:empty|zeros)\(\s*(?:0\s*[,)]|\(\s*0\s*,)")
    assert (old.search(text) is not None) is found


@pytest.mark.parametrize(("line", "registered"), [
    ('self.register_parameter("w_s", p)', True),
    ("layer.register_buffer('w_s', t)", True),
    ('replace_parameter(layer, "w_s", t)', True),
    ('self.register_buffer("w_s", t, persistent=False)', False),
    ('self.myregister_parameter("w_s", p)', False),
    ('self.register_parameter("w_sx", p)', False),
])
def test_a_registration_makes_the_attribute_computed_after_load(line: str,
                                                                registered: bool) -> None:
    text = f"class L:\n    def __init__(self):\n        {line}\n\n    def f(self):\n" \
           "        return self.w_s\n"
    index = ReaderIndex([("l.py", text)], [], lambda c: frozenset({c}))
    assert computed_after_load(index, "w_s") is registered


@pytest.mark.parametrize(("line", "emptied"), [
    ("self.norm.weight = torch.empty(0, 4)", True),
    ("x = (self.norm, torch.nn.Parameter(torch.empty((0, 4))))", True),
    ("layer.norm.weight = w.new_empty(0)", True),
    ("self.xnorm.weight = torch.empty(0, 4)", False),  # another submodule
    ("self.norm_f.weight = torch.empty(0, 4)", False),
    ("t = torch.empty(0, 4); self.norm.weight = t", False),  # the allocation first
    ("self.norm.weight = myempty(0)", False),
])
def test_a_submodule_emptied_in_the_tree_by_line(line: str, emptied: bool) -> None:
    tree = {"a.py": "import torch\n", "b.py": f"def f(self):\n    {line}\n"}
    found = platforms.source_dropped("self.norm.weight", "", tree)
    assert (found == "`norm`'s parameter is emptied at b.py:2: a reload into it raises (0 "
            "elements, not the checkpoint's shape) instead of leaving this stale") is emptied
    assert (found is None) is not emptied


def test_a_handed_attribute_is_followed_in_the_files_naming_it() -> None:
    """The handed-reader search reads only the files the reader index's word table names
    for the attribute (here a.py alone); the read is found as when every file is read."""
    files = [("a.py", "class Owner:\n    def __init__(self):\n        self.tab = build()\n"
                      "        self.kern = Kern(self.tab)\n"),
             ("b.py", "x = 1\n"),
             ("c.py", "class Kern:\n    def __init__(self, tab):\n        self.t = tab\n\n"
                      "    def forward(self, x):\n        return op(x, self.t)\n")]
    index = ReaderIndex(files, [], lambda c: frozenset({c}))
    assert index.files_naming("tab") == [0]
    reader = handed_reader(index, "Owner", "tab")
    assert str(reader) == "forward c.py:6 in Kern.forward: return op(x, self.t)"
    every = ReaderIndex(files, [], lambda c: frozenset({c}))
    every.files_naming = lambda name: list(range(len(files)))  # type: ignore[method-assign]
    assert str(reader) == str(handed_reader(every, "Owner", "tab"))
