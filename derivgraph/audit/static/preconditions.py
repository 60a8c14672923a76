"""Backends the storing method's own conversion call can never finish loading on.

A storing method often converts its weights through a free function before it builds its
kernel (``convert_weight_to_mxfp4_moe_kernel_format(mxfp4_backend=self.mxfp4_backend, ...)``).
That function may branch on the backend it is handed and, in a branch, insist on an optional
parameter (``if mxfp4_backend in TRTLLM_BACKENDS: assert _cache_permute_indices is not None``,
or ``if x is None: raise ...``). When the storing method's call hands the function the backend
but never passes that parameter (it keeps its ``None`` default), loading fails on those
backends: they never serve the config the method stores, so their experts classes are not
reader candidates (:func:`failing_backends`). Read from source with :mod:`ast`; the backends a
branch names are enum members (``Enum.A``), a tuple of them, or a module-level name bound to
one.
"""

from __future__ import annotations

import ast

from derivgraph.audit.static.source_tree import (
    ReaderIndex,
    class_node,
    defining_module,
    function_node,
    parsed,
)
from derivgraph.audit.static.walk import walk

__all__ = ["failing_backends"]


def failing_backends(index: ReaderIndex, home: str, cls: str | None,
                     method: str) -> frozenset[str]:
    """The backend members on which a conversion call of method ``method`` of class ``cls``
    (in ``home``) fails a precondition the call never sets (module docstring); empty when
    none."""
    if not cls or not method:
        return frozenset()

    def find() -> frozenset[str]:
        fn = function_node(class_node(index, home, cls), method)
        if fn is None:
            return frozenset()
        out: set[str] = set()
        for call in (n for n in walk(fn) if isinstance(n, ast.Call)
                     and isinstance(n.func, ast.Name)):
            module = defining_module(index, call.func.id, home)
            tree = parsed(index, module) if module else None
            callee = function_node(tree, call.func.id)
            if tree is not None and callee is not None:
                out |= _failing(tree, callee, call)
        return frozenset(out)

    return index.memo(f"failing backends {hash(home)} {cls} {method}", find)


def _failing(tree: ast.Module, callee: ast.FunctionDef, call: ast.Call) -> set[str]:
    """The members tested in ``callee`` by a branch on a parameter ``call`` passes whose body
    insists on a ``None``-default parameter ``call`` leaves unset."""
    args = callee.args
    names = [a.arg for a in args.posonlyargs + args.args]
    passed = set(names[:len(call.args)]) | {k.arg for k in call.keywords if k.arg}
    if any(isinstance(a, ast.Starred) for a in call.args) or None in {k.arg for k in
                                                                      call.keywords}:
        return set()  # ``*args``/``**kwargs``: what is passed is not known
    positional = args.args[len(args.args) - len(args.defaults):]
    defaults = [*zip(positional, args.defaults), *zip(args.kwonlyargs, args.kw_defaults)]
    unset = {a.arg for a, d in defaults if _is_none(d) and a.arg not in passed}
    if not unset:
        return set()
    out: set[str] = set()
    for branch in (n for n in walk(callee) if isinstance(n, ast.If)):
        tested = _tested(branch.test, passed, tree)
        if tested and any(_insists(stmt, unset) for stmt in branch.body):
            out |= tested
    return out


def _is_none(node: ast.expr | None) -> bool:
    return isinstance(node, ast.Constant) and node.value is None


def _tested(test: ast.expr, passed: set[str], tree: ast.Module) -> set[str]:
    """The members ``p == E.M`` / ``p in (E.A, E.B)`` / ``p in NAME`` names, ``p`` a passed
    parameter; empty otherwise."""
    if not (isinstance(test, ast.Compare) and len(test.ops) == 1
            and isinstance(test.left, ast.Name) and test.left.id in passed):
        return set()
    right = test.comparators[0]
    if isinstance(test.ops[0], (ast.Eq, ast.Is)):
        return {right.attr} if isinstance(right, ast.Attribute) else set()
    if not isinstance(test.ops[0], ast.In):
        return set()
    if isinstance(right, ast.Name):
        right = next((s.value for s in tree.body if isinstance(s, ast.Assign)
                      and any(isinstance(t, ast.Name) and t.id == right.id for t in s.targets)),
                     right)
    if isinstance(right, (ast.Tuple, ast.List, ast.Set)) and right.elts and all(
            isinstance(e, ast.Attribute) for e in right.elts):
        return {e.attr for e in right.elts if isinstance(e, ast.Attribute)}
    return set()


def _insists(stmt: ast.stmt, unset: set[str]) -> bool:
    """``assert p is not None`` or ``if p is None: raise ...`` for ``p`` in ``unset``."""
    if isinstance(stmt, ast.Assert):
        return _none_test(stmt.test, ast.IsNot, unset)
    return (isinstance(stmt, ast.If) and _none_test(stmt.test, ast.Is, unset)
            and any(isinstance(s, ast.Raise) for s in stmt.body))


def _none_test(test: ast.expr, op: type[ast.cmpop], unset: set[str]) -> bool:
    return (isinstance(test, ast.Compare) and len(test.ops) == 1 and isinstance(test.ops[0], op)
            and isinstance(test.left, ast.Name) and test.left.id in unset
            and _is_none(test.comparators[0]))
