"""scan43: the construction search in reversed text, the compact tree facts and the faster
function index give the same answers as the searches and walks they replace."""

from __future__ import annotations

import ast
import re
from collections import deque

from derivgraph.audit.static.construction import _HEADER, _enclosing, construction_sites
from derivgraph.audit.static.handoff import _calls
from derivgraph.audit.static.scope import FunctionIndex
from derivgraph.audit.static.walk import NESTED_SCOPES, children, own_nodes, walk
from tests.audit.static.test_static_scan_fast_paths import _reference_index

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


# ---- walks with :func:`.walk.children` inlined ----------------------------------------------


_SOURCE = '''
class A(Base):
    def f(self, x, *a, k=g(1), **kw):
        self.register_buffer("b", torch.zeros(n(2)))
        setattr(self, "c", lambda y: h(y, setattr(o, "d", 1)))
        for i, (p, q) in enumerate(zip(a, kw.items())):
            if p := q(i):
                with ctx(p) as c, other():
                    self.w.set_(c[1:i, ...].t())
            else:
                async def inner():
                    await z(x)
                yield [m(v) for v in range(3) if v] + {u: w(u) for u in p}
        match x:
            case {"k": K(a=1), **rest} if rest:
                replace_parameter(self, "e", f"{x!r:>{n(4)}}")
        try:
            del self.t[0]
        except (E1, E2) as err:
            raise R(err) from err
        return type(self).__name__, (yield from gen()), not -x @ y
'''


def _reference_own_nodes(node: ast.AST, nested: tuple[type, ...] = NESTED_SCOPES, *,
                         breadth_first: bool = False, with_root: bool = False) -> list:
    """:func:`own_nodes` as it was: :func:`children` called per node."""
    out = [node] if with_root else []
    todo = deque([c for c in children(node) if not isinstance(c, nested)])
    pop = todo.popleft if breadth_first else todo.pop
    while todo:
        cur = pop()
        out.append(cur)
        todo.extend([c for c in children(cur) if not isinstance(c, nested)])
    return out


def _nodes() -> list[ast.AST]:
    return list(ast.walk(ast.parse(_SOURCE)))


def test_own_nodes_inlined_walks_the_same_nodes_in_the_same_order() -> None:
    for node in _nodes():
        for kw in ({}, {"breadth_first": True}, {"with_root": True}):
            assert list(own_nodes(node, **kw)) == _reference_own_nodes(node, **kw)
        assert list(own_nodes(node, (ast.Lambda,))) == _reference_own_nodes(node, (ast.Lambda,))
    func = next(n for n in _nodes() if isinstance(n, ast.FunctionDef) and n.name == "f")
    assert len(list(own_nodes(func))) > 140


def test_own_nodes_comparison_goes_red_when_the_order_changes() -> None:
    """Canary: the reference walk, breadth first against depth first, differs."""
    func = next(n for n in _nodes() if isinstance(n, ast.FunctionDef) and n.name == "f")
    assert _reference_own_nodes(func) != _reference_own_nodes(func, breadth_first=True)


def _reference_calls(node: ast.AST) -> list[ast.Call]:
    out, stack = [], [node]
    while stack:
        n = stack.pop()
        if isinstance(n, ast.Lambda):
            continue
        if isinstance(n, ast.Call):
            out.append(n)
        stack.extend(children(n))
    return out


def test_handoff_calls_inlined_match_the_children_walk() -> None:
    for node in _nodes():
        assert list(_calls(node)) == _reference_calls(node)
    assert len(_reference_calls(ast.parse(_SOURCE))) > 15


def test_function_index_inlined_matches_the_children_walk() -> None:
    funcs = [n for n in _nodes() if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef,
                                                   ast.Lambda))]
    for func in funcs:
        index = FunctionIndex.of(func)
        assert (index.calls, index.site_calls) == _reference_index(func)
    f = FunctionIndex.of(funcs[0])
    # register_buffer, setattr, set_, replace_parameter (not the setattr in the lambda)
    assert sum(map(len, f.site_calls.values())) == 4


def test_walk_is_ast_walk_without_expression_contexts() -> None:
    """The ``ast.walk`` calls of the static audit became :func:`.walk.walk`: the same nodes
    in the same order but the ``Load``/``Store``/``Del`` leaves, which no caller looks at (they
    test other node types; ``_names_getattr`` reads ``vars``, empty for them)."""
    for node in _nodes():
        if isinstance(node, ast.expr_context):
            continue  # never a root: the callers walk statements and expressions
        assert list(walk(node)) == [n for n in ast.walk(node)
                                    if not isinstance(n, ast.expr_context)]
    assert all(vars(n) == {} for n in ast.walk(ast.parse(_SOURCE))
               if isinstance(n, ast.expr_context))


def test_walk_comparison_goes_red_without_the_context_filter() -> None:
    """Canary: ``ast.walk`` itself yields the expression contexts."""
    tree = ast.parse(_SOURCE)
    assert list(walk(tree)) != list(ast.walk(tree))
