"""scan28's speed paths give exactly what the code they replaced gave.

* :func:`.walk.own_nodes` serves the three former walkers (``ast.walk_no_lambda``,
  ``forwarded._own_nodes``, ``returned_copies._own_nodes``), each in its own order; the former
  ones are kept here as the reference and compared on every function of the static corpora.
* :func:`.tree_facts.tree_facts` (forked workers, one file at a time) merged by
  :func:`.index.merged_index` gives the same tree index, in the same dict orders, as one serial
  pass over the texts (the former ``build_index`` loop, kept here).

A canary per comparison shows that it sees a planted difference.
"""

from __future__ import annotations

import ast
import dataclasses
from collections.abc import Iterator

import pytest

from derivgraph.audit.static import index as index_mod
from derivgraph.audit.static.ast import walk_no_lambda
from derivgraph.audit.static.index import TreeIndex, build_index, merged_index
from derivgraph.audit.static.scope import ancestors_index, regex_classes
from derivgraph.audit.static.tree_facts import tree_facts
from derivgraph.audit.static.walk import children, own_nodes
from tests.audit.static.expectations import CORPUS, EVIDENCE_CORPUS

_FILES = sorted(CORPUS.rglob("*.py")) + sorted(EVIDENCE_CORPUS.rglob("*.py"))
_NESTED = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)


def _functions() -> list[ast.AST]:
    return [n for p in _FILES for n in ast.walk(ast.parse(p.read_text()))
            if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda))]


# ---- the former walkers ------------------------------------------------------------------------

def _former_walk_no_lambda(node: ast.AST) -> Iterator[ast.AST]:
    stack = [node]
    while stack:
        cur = stack.pop()
        yield cur
        for child in children(cur):
            if not isinstance(child, (ast.Lambda, ast.FunctionDef, ast.AsyncFunctionDef)):
                stack.append(child)


def _former_forwarded(func: ast.AST) -> Iterator[ast.AST]:
    stack = list(children(func))
    while stack:
        node = stack.pop()
        if isinstance(node, _NESTED):
            continue
        yield node
        stack.extend(children(node))


def _former_returned_copies(func: ast.AST) -> list[ast.AST]:
    out: list[ast.AST] = []
    todo = list(ast.iter_child_nodes(func))
    while todo:
        node = todo.pop(0)
        if isinstance(node, _NESTED):
            continue
        out.append(node)
        todo.extend(ast.iter_child_nodes(node))
    return [n for n in out if not isinstance(n, ast.expr_context)]  # no rule reads these


def _ids(nodes) -> list[int]:
    return [id(n) for n in nodes]


def test_own_nodes_is_each_former_walker_in_its_order():
    functions = _functions()
    assert len(functions) > 300
    for func in functions:
        assert _ids(walk_no_lambda(func)) == _ids(_former_walk_no_lambda(func))
        assert _ids(own_nodes(func)) == _ids(_former_forwarded(func))
        assert _ids(own_nodes(func, breadth_first=True)) == _ids(_former_returned_copies(func))


def test_own_nodes_comparison_goes_red_on_the_other_order():
    """Canary: depth first is not the breadth-first order the container search used."""
    func = ast.parse("def f():\n    a = g(1)\n    return a\n").body[0]
    assert _ids(own_nodes(func)) != _ids(_former_returned_copies(func))
    assert _ids(own_nodes(func, breadth_first=True)) == _ids(_former_returned_copies(func))


def test_own_nodes_leaves_nested_scopes_out():
    func = ast.parse("def f():\n    x = 1\n    def g():\n        y = 2\n"
                     "    class C:\n        z = 3\n    h = lambda: 4\n").body[0]
    names = {n.id for n in own_nodes(func) if isinstance(n, ast.Name)}
    assert names == {"x", "h"}
    assert {n.id for n in walk_no_lambda(func) if isinstance(n, ast.Name)} == {"x", "h", "z"}


# ---- the tree index from per-file facts ----------------------------------------------------------

def _former_build_index(files, ancestors) -> TreeIndex:
    index = TreeIndex()
    for i, (module, text) in enumerate(files):
        index.modules.setdefault(module, i)
        index_mod._scan_text(index, i, module, text)
    for name, lineage in ancestors.items():
        for base in lineage:
            if base != name:
                index.subclasses.setdefault(base, set()).add(name)
    return index


def _tables(index: TreeIndex) -> dict[str, list]:
    """Every table with its keys in dict order (order matters downstream)."""
    out = {}
    for f in dataclasses.fields(index):
        table = getattr(index, f.name)
        if isinstance(table, dict):
            out[f.name] = [(k, sorted(v) if isinstance(v, set) else
                            [dataclasses.asdict(e) for e in v] if isinstance(v, list) else v)
                           for k, v in table.items()]
        else:
            out[f.name] = sorted(table)
    return out


@pytest.fixture(scope="module")
def files() -> list[tuple[str, str]]:
    texts = [(p.stem, p.read_text()) for p in _FILES]
    # the same text twice: later files must not replace the first entry of a name
    return texts + [("again." + m, t) for m, t in texts] + texts[:3]


def _ancestors(files):
    bases: dict[str, set[str]] = {}
    for _, text in files:
        for cls, cls_bases in regex_classes(text):
            bases.setdefault(cls, set()).update(cls_bases)
    return ancestors_index(bases)


@pytest.mark.parametrize("jobs", [1, 2])
def test_forked_facts_give_the_serial_index(files, jobs):
    ancestors = _ancestors(files)
    facts = tree_facts(files, jobs=jobs)
    merged = merged_index([(m, f.index) for (m, _), f in zip(files, facts)], ancestors)
    former = _tables(_former_build_index(files, ancestors))
    assert sum(len(v) for v in former.values()) > 500
    assert _tables(merged) == former
    assert _tables(build_index(files, ancestors)) == former
    assert [f.classes for f in facts] == [list(regex_classes(t)) for _, t in files]


def test_index_comparison_goes_red_when_a_later_file_wins(files):
    """Canary: merging with the last entry winning (not the first) changes the tables."""
    ancestors = _ancestors(files)
    facts = tree_facts(files, jobs=1)
    wrong = TreeIndex()
    for i, ((module, _), f) in enumerate(zip(files, facts)):
        wrong.modules[module] = i
        wrong.functions.update(f.index.functions)
        for name, entries in f.index.classes.items():
            wrong.classes.setdefault(name, []).extend(entries)
    assert _tables(wrong)["modules"] != _tables(_former_build_index(files, ancestors))["modules"]
    assert _tables(wrong)["functions"] != \
        _tables(_former_build_index(files, ancestors))["functions"]


# ---- module._names_getattr ----------------------------------------------------------------------

def test_names_getattr_is_the_former_dump_test():
    """The former test was ``"getattr" in ast.dump(func.args)``; compared on every function's
    arguments in the corpora and on arguments that name it in each place a string can be."""
    from derivgraph.audit.static.module import _names_getattr
    argses = [f.args for f in _functions() if not isinstance(f, ast.Lambda)]
    argses += [ast.parse(src).body[0].args for src in (
        "def f(x=getattr(a, 'b')): pass", "def f(my_getattr_fn): pass",
        "def f(x='use getattr'): pass", "def f(x=b'getattr'): pass",
        "def f(x: 'getattr_t' = 1): pass", "def f(*, x=o.getattr): pass",
        "def f(x=get_attr(a)): pass")]
    hits = [_names_getattr(a) for a in argses]
    assert hits == ["getattr" in ast.dump(a) for a in argses]
    assert sum(hits) == 6


def test_names_getattr_comparison_goes_red_on_a_missed_string():
    """Canary: a test of names only misses the string default the dump holds."""
    args = ast.parse("def f(x='use getattr'): pass").body[0].args
    names_only = any("getattr" in getattr(n, "id", "") or "getattr" in getattr(n, "arg", "")
                     for n in ast.walk(args))
    assert names_only != ("getattr" in ast.dump(args))
