"""scan43: the construction search in reversed text, the compact tree facts and the faster
function index give the same answers as the searches and walks they replace."""

from __future__ import annotations

import re

from derivgraph.audit.static.construction import _HEADER, _enclosing, construction_sites

_NAMES = {"Kern", "KernBase", "BaseKern", "MoE", "ExpertsX", "Ünï"}
_TEXTS = [
    "x = Kern(1)\nKernBase (2)\nBaseKern\t(3)\nMoE(4)\n",
    "class A:\n    def f(self):\n        return mod.Kern(1) + KernX(2) + XKern(3)\n",
    "def g():\n    y = _Kern(1); z = Kern  (2); w = Kern\n(3)\n    return ExpertsX()\n",
    "class Kern(Base):\n    pass\nclass KernBase:\n    pass\nasync def h():\n    MoE()\n",
    "Kern(", "(Kern(", "aKern(", "Ünï(1)\nxÜnï(2)\n", "", "no mention at all\n",
    "class B:\n    async def m(self):\n        def inner():\n            return BaseKern(0)\n",
]


def _forward_sites(texts: list[str], names: set[str]) -> dict[str, list[tuple]]:
    """The former forward search: ``(?<![\\w])(Name|...)[ \\t]*\\(`` over each text."""
    call = re.compile(r"(?<![\w])(" + "|".join(sorted(map(re.escape, names))) + r")[ \t]*\(")
    out: dict[str, list[tuple]] = {n: [] for n in names}
    for index, text in enumerate(texts):
        headers = [(h.start(), len(h.group(1).expandtabs()), h.group(2), h.group(3))
                   for h in _HEADER.finditer(text)]
        for m in call.finditer(text):
            line_start = text.rfind("\n", 0, m.start()) + 1
            if text[line_start:m.start()].strip() in ("class", "def", "async def"):
                continue
            out[m.group(1)].append((index, *_enclosing(text, m.start(), headers)))
    return out


def test_construction_sites_in_reversed_text_match_the_forward_search() -> None:
    got = construction_sites(_TEXTS, _NAMES, jobs=1)
    assert got == _forward_sites(_TEXTS, _NAMES)
    assert got["Kern"][:3] == [(0, None, None), (1, "A", "f"), (2, None, "g")]
    assert got["Ünï"] == [(7, None, None)]
    assert sum(map(len, got.values())) == 12


def test_construction_sites_comparison_goes_red_on_a_shorter_name() -> None:
    """Canary: a search that also takes a name inside a longer word (no word boundary)
    differs from the forward search."""
    loose = re.compile(r"(Kern)[ \t]*\(")
    found = [m.start() for m in loose.finditer(_TEXTS[1])]
    assert len(found) == 2  # mod.Kern( and XKern(
    assert len(_forward_sites([_TEXTS[1]], {"Kern"})["Kern"]) == 1
