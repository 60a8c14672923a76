"""The scan's speed paths (scan21e) give exactly what the code they replaced gave.

Each fast path is compared with the former implementation, kept here as the reference, on the
static corpora (every node, every function, every table entry); a canary per comparison
shows that it sees a planted difference.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Collection, Mapping

import pytest

from derivgraph.audit.static.construction import construction_sites
from derivgraph.audit.static.property_chains import lineage_chains
from derivgraph.audit.static.scope import _SITE_ATTRS, _SITE_NAMES, FunctionIndex
from derivgraph.audit.static.walk import children
from tests.audit.static.expectations import CORPUS, EVIDENCE_CORPUS


def _trees() -> list[ast.Module]:
    files = sorted(CORPUS.rglob("*.py")) + sorted(EVIDENCE_CORPUS.rglob("*.py"))
    return [ast.parse(p.read_text()) for p in files]


def _texts() -> list[str]:
    files = sorted(CORPUS.rglob("*.py")) + sorted(EVIDENCE_CORPUS.rglob("*.py"))
    return [p.read_text() for p in files]


# ---- walk.children -------------------------------------------------------------------------


def _reference_children(node: ast.AST) -> list[ast.AST]:
    return [c for c in ast.iter_child_nodes(node) if not isinstance(c, ast.expr_context)]


def test_children_are_iter_child_nodes_without_contexts():
    nodes = [n for tree in _trees() for n in ast.walk(tree)]
    assert len(nodes) > 5_000
    for node in nodes:
        assert [id(c) for c in children(node)] == [id(c) for c in _reference_children(node)]


def test_children_comparison_goes_red_on_a_dropped_child():
    """Canary: a child list missing its last element differs from the reference."""
    node = ast.parse("f(a, b)").body[0].value
    assert [id(c) for c in children(node)[:-1]] != [id(c) for c in _reference_children(node)]


# ---- FunctionIndex.of ----------------------------------------------------------------------


def _reference_index(func: ast.AST) -> tuple[list[ast.Call], dict[int, list[ast.Call]]]:
    """``FunctionIndex.of`` before scan21e."""
    calls: list[ast.Call] = []
    sites: dict[int, list[ast.Call]] = {}
    stack: list[tuple[ast.AST, ast.AST, bool]] = [(func, func, False)]
    while stack:
        node, stmt, in_lambda = stack.pop()
        if isinstance(node, ast.stmt):
            stmt = node
        elif isinstance(node, ast.Lambda):
            in_lambda = True
        elif isinstance(node, ast.Call):
            calls.append(node)
            f = node.func
            if not in_lambda and ((isinstance(f, ast.Attribute) and f.attr in _SITE_ATTRS)
                                  or (isinstance(f, ast.Name) and f.id in _SITE_NAMES)):
                sites.setdefault(id(stmt), []).append(node)
        for child in _reference_children(node):
            stack.append((child, stmt, in_lambda))
    for found in sites.values():
        found.sort(key=lambda c: (c.lineno, c.col_offset))
    return calls, sites


def _ids(calls: list[ast.Call], sites: dict[int, list[ast.Call]]) -> tuple:
    return [id(c) for c in calls], [(k, [id(c) for c in v]) for k, v in sites.items()]


def test_function_index_is_the_former_walk():
    funcs = [n for tree in _trees() for n in ast.walk(tree)
             if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))]
    assert len(funcs) > 300
    with_sites = 0
    for func in funcs:
        fast = FunctionIndex.of(func)
        assert _ids(fast.calls, fast.site_calls) == _ids(*_reference_index(func))
        with_sites += bool(fast.site_calls)
    assert with_sites >= 20  # the site keying is exercised, not only the call list


def test_function_index_comparison_goes_red_on_a_missed_lambda():
    """Canary: a walk that does not note lambdas keys a ``setattr`` inside one as a site."""
    func = ast.parse("def f(m):\n    g = lambda: setattr(m, 'w', 1)\n").body[0]
    calls, sites = _reference_index(func)
    assert sites == {} and FunctionIndex.of(func).site_calls == {}
    planted = {id(func.body[0]): [calls[0]]}
    assert _ids(calls, planted) != _ids(*_reference_index(func))


# ---- property chains of a lineage ----------------------------------------------------------


def _reference_chains(chains: Mapping[str, str], lineage: Collection[str]) -> dict[str, str]:
    """The filter ``FunctionAudit`` ran per reached function before scan21e."""
    return {key.split(".", 1)[1]: chain for key, chain in chains.items()
            if key.split(".", 1)[0] in lineage}


_TABLE = {"A.w": "x.w", "B.v": "y.v", "A.v": "z.v", "C.w": "c.w", "B.w": "b.w", "A.u": "a.u"}


@pytest.mark.parametrize("lineage", [(), ("A",), ("B",), ("A", "B"), ("B", "A"), ("A", "C"),
                                     ("A", "B", "C"), ("D",), ("C", "D")])
def test_lineage_chains_are_the_filtered_table(lineage):
    got = lineage_chains(_TABLE, lineage)
    want = _reference_chains(_TABLE, lineage)
    assert list(got.items()) == list(want.items())  # same values and the same key order


def test_lineage_chains_follow_a_new_or_grown_table():
    table = dict(_TABLE)
    assert lineage_chains(table, ("A",)) == _reference_chains(table, ("A",))
    table["A.t"] = "q.t"  # the same object, grown: regrouped
    assert lineage_chains(table, ("A",)) == _reference_chains(table, ("A",))
    other = {"A.w": "other.w"}
    assert lineage_chains(other, ("A",)) == {"w": "other.w"}
    assert lineage_chains({}, ("A",)) == {}


def test_lineage_chains_comparison_goes_red_when_the_first_entry_wins():
    """Canary: on a shared ``prop`` (``w`` of A, C and B) the later class's entry must win."""
    first_wins: dict[str, str] = {}
    for key, chain in _TABLE.items():
        owner, prop = key.split(".", 1)
        if owner in ("A", "B", "C"):
            first_wins.setdefault(prop, chain)
    assert first_wins != lineage_chains(_TABLE, ("A", "B", "C"))


# ---- construction sites --------------------------------------------------------------------


def _reference_sites(texts: list[str], names: set[str]) -> dict:
    """``construction_sites`` with the former ``any(n in text ...)`` prefilter."""
    kept = [t if any(n in t for n in names) else "" for t in texts]
    return construction_sites(kept, names)


def test_construction_sites_with_the_combined_prefilter():
    texts = _texts() + ["x = Linear(3)\n", "class Linear:\n    pass\n", "LinearX(1)\n",
                        "def f():\n    return mod.Linear (2)\n", "Lin\n"]
    names = set(re.findall(r"^class (\w+)", "\n".join(texts), re.M)) | {"Linear", "Missing"}
    assert len(names) > 30
    got = construction_sites(texts, names)
    assert got == _reference_sites(texts, names)
    assert sum(map(len, got.values())) > 10


def test_construction_sites_comparison_goes_red_when_a_text_is_skipped():
    """Canary: dropping one mentioning text changes the sites."""
    texts = ["x = Linear(3)\n", "y = Linear(4)\n"]
    assert construction_sites(texts[:1] + [""], {"Linear"}) != _reference_sites(texts, {"Linear"})


# ---- config_reader._keeper -----------------------------------------------------------------


def _reference_keeper(files, kinds, family):
    """``config_reader._keeper`` before scan21e (no per-class text test)."""
    from derivgraph.audit.static.config_reader import _next_class
    from derivgraph.audit.static.def_text import def_text
    if not kinds:
        return None
    alt = "|".join(map(re.escape, sorted(kinds)))
    param = re.compile(rf"[(,][ \t\n]*(\w+)[ \t]*:[ \t]*(?:Optional\[)?(?:{alt})\b")
    best = None
    for _, text in files:
        if not any(k in text for k in kinds):
            continue
        for cls in re.finditer(r"^class[ \t]+(\w+)", text, re.M):
            init = def_text(text[cls.start():_next_class(text, cls.end())], "__init__")
            header = init[:init.find(":\n")]
            for p in param.finditer(header):
                kept = re.search(rf"^[ \t]+self\.(\w+)[ \t]*(?::[^=\n]*)?=[ \t]*{p.group(1)}"
                                 r"[ \t]*$", init, re.M)
                size = len(family(cls.group(1)))
                if kept and (best is None or size > best[0]):
                    best = (size, cls.group(1), kept.group(1))
    return best[1:] if best else None


_KEEPERS = [
    ("a.py", "class Cfg:\n    pass\n\nclass Base:\n    def __init__(self, cfg: Cfg):\n"
             "        self.cfg = cfg\n\nclass Sub(Base):\n    def __init__(self, c: Optional[Cfg]"
             ", x: int):\n        self.kept = c\n"),
    ("b.py", "class Other:\n    def __init__(self, q: QCfg):\n        self.q = q\n"),
]


@pytest.mark.parametrize("kinds", [frozenset({"Cfg"}), frozenset({"QCfg", "Cfg"}),
                                   frozenset({"Tensor"}), frozenset({"Missing"}), frozenset()])
def test_keeper_is_the_former_search(kinds):
    from derivgraph.audit.static.config_reader import _keeper
    files = [(str(i), t) for i, t in enumerate(_texts())] + _KEEPERS
    sizes = {"Base": 3, "Sub": 1, "Other": 2}

    def family(c):
        return frozenset(range(sizes.get(c, 1)))
    assert _keeper(files, kinds, family) == _reference_keeper(files, kinds, family)


def test_keeper_comparison_goes_red_on_a_smaller_family():
    """Canary: the keeper with the larger family wins (Base over Sub)."""
    from derivgraph.audit.static.config_reader import _keeper
    assert _keeper(_KEEPERS, frozenset({"Cfg"}), lambda c: frozenset(range(3 if c == "Base"
                                                                          else 1))) \
        == ("Base", "cfg")
    assert _reference_keeper(_KEEPERS, frozenset({"Cfg"}), lambda c: frozenset(
        range(1 if c == "Base" else 3))) != ("Base", "cfg")
