"""The consumer of a value a lazy accessor returns: the caller's use, not the cache lookup.

A cached buffer is often read by a method that returns it (grown on demand): ``def
_unit_weights(self, n, width): buf = self._unit_weights_bufs.get(width) ... return buf[:n]``.
The lookup there only fetches the value; the kernel reads it where a caller of that method
hands the returned value to a call (``unit = self._unit_weights(...)`` then
``rocm_aiter_fused_experts(..., topk_weights=unit, ...)``). :func:`returned_consumer` follows
the method's callers in the same class: a local the call is bound to (one of a tuple's targets
when the call returns a tuple), a ``return`` that hands the value on from another method (a
position of a returned tuple), calls through an attribute bound to the method (``self.fn =
self._get_ones`` ... ``x, w = self.fn(...)``), up to :data:`CALLER_DEPTH` methods, and names
the first use of that local that is an argument of a call, or a call of the method handed
straight to another call (``mm(x, self._weight())``). A getter that returns the attribute
itself (``return self._stable_weight``) is followed the same way. Read from source with
:mod:`ast`.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass

from derivgraph.audit.static.source_tree import function_node, top_level_class
from derivgraph.audit.static.walk import own_nodes, self_attribute, walk

__all__ = ["CALLER_DEPTH", "Consumer", "returned_consumer"]

CALLER_DEPTH = 3
"""How many methods a returned value is followed up through."""


@dataclass(frozen=True)
class Consumer:
    """Where a caller hands the returned value to a call: the argument's line and column (1-
    and 0-based), its method, and the calls that carried the value there (line, source)."""

    line: int
    col: int
    function: str
    via: tuple[tuple[int, str], ...]


def returned_consumer(tree: ast.Module, cls: str, method: str, line: int,
                      lines: list[str]) -> Consumer | None:
    """The use that consumes what method ``method`` of class ``cls`` returns, when the read on
    ``line`` binds a local (``buf = self.x``, ``buf = self.x.get(k)``) that the method returns
    (``return buf``, ``return buf[:n]``); None when the read is no such lookup or no caller of
    the class hands the value to a call. ``lines`` are the file's lines (for the quotes)."""
    node = top_level_class(tree, cls)
    fn = function_node(node, method)
    if fn is None:
        return None
    local = _bound_local(fn, line)
    if local is None or not any(_returns(r.value, local) for r in _returns_of(fn)):
        if not _returns_read(fn, line):
            return None
    return _follow(node, method, None, lines, 0)


def _returns_of(fn: ast.FunctionDef) -> list[ast.Return]:
    return [n for n in own_nodes(fn) if isinstance(n, ast.Return) and n.value is not None]


def _bound_local(fn: ast.FunctionDef, line: int) -> str | None:
    """The local the statement starting on ``line`` binds from a read through ``self``
    (``buf = self.x``, ``= self.x.get(k)``, ``= self.x[k]``), or None."""
    for n in own_nodes(fn):
        if (isinstance(n, ast.Assign) and n.lineno == line and len(n.targets) == 1
                and isinstance(n.targets[0], ast.Name) and _self_read(n.value)):
            return n.targets[0].id
    return None


def _returns_read(fn: ast.FunctionDef, line: int) -> bool:
    """Whether the statement on ``line`` returns the read itself (``return self.x``): a getter
    method, whose caller consumes the value."""
    return any(isinstance(n, ast.Return) and n.lineno == line and n.value is not None
               and self_attribute(n.value) is not None for n in own_nodes(fn))


def _self_read(node: ast.expr) -> bool:
    """``self.x``, ``self.x[k]`` or ``self.x.get(k)``."""
    if isinstance(node, ast.Subscript):
        node = node.value
    elif (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
          and node.func.attr == "get"):
        node = node.func.value
    return self_attribute(node) is not None


def _returns(value: ast.expr, local: str) -> bool:
    """Whether ``value`` is the local or a slice or view of it (``buf``, ``buf[:n]``)."""
    while isinstance(value, ast.Subscript):
        value = value.value
    return isinstance(value, ast.Name) and value.id == local


def _aliases(cls: ast.ClassDef, method: str) -> set[str]:
    """``method`` and the attributes the class binds to it (``self.fn = self.method``)."""
    out = {method}
    for n in walk(cls):
        if (isinstance(n, ast.Assign) and len(n.targets) == 1
                and self_attribute(n.value) == method
                and (alias := self_attribute(n.targets[0])) is not None):
            out.add(alias)
    return out


def _follow(cls: ast.ClassDef, method: str, position: int | None, lines: list[str],
            depth: int) -> Consumer | None:
    """The first consuming use, in the class's text order, of what ``method`` returns (its
    ``position`` in a returned tuple when not None)."""
    if depth >= CALLER_DEPTH:
        return None
    names = _aliases(cls, method)
    for fn in (n for n in cls.body if isinstance(n, ast.FunctionDef)):
        for stmt in sorted((n for n in own_nodes(fn)
                            if isinstance(n, (ast.Assign, ast.Return, ast.Expr))),
                           key=lambda n: (n.lineno, n.col_offset)):
            value = stmt.value
            if value is None:
                continue
            call_line = value.lineno
            handed = _handed_call(value, names)
            if handed is not None and position is None:  # ``mm(x, self.method())``
                found = Consumer(handed.lineno, handed.col_offset, fn.name, ())
            elif isinstance(stmt, ast.Expr):
                continue
            elif isinstance(stmt, ast.Return):
                at = _position(value, names)
                if at is None or (position is not None and at != -1):
                    continue
                found = _follow(cls, fn.name, position if at == -1 else at, lines, depth + 1)
            else:
                if not (isinstance(value, ast.Call) and self_attribute(value.func) in names):
                    continue
                local = _target(stmt.targets, position)
                use = _use(fn, local, stmt.end_lineno or stmt.lineno) if local else None
                found = None if use is None else Consumer(use.lineno, use.col_offset, fn.name,
                                                          ())
            if found is not None:
                quote = lines[call_line - 1].strip()[:80] if call_line <= len(lines) else ""
                return Consumer(found.line, found.col, found.function,
                                ((call_line, quote), *found.via))
    return None


def _handed_call(value: ast.expr, names: set[str]) -> ast.Call | None:
    """A call of one of ``names`` that ``value`` hands straight to another call as an
    argument (``mm(x, self.method())``), the first in source order; None when none."""
    found = [arg for n in walk(value) if isinstance(n, ast.Call)
             for arg in [*n.args, *(k.value for k in n.keywords)]
             if isinstance(arg, ast.Call) and self_attribute(arg.func) in names]
    return min(found, key=lambda a: (a.lineno, a.col_offset), default=None)


def _position(value: ast.expr, names: set[str]) -> int | None:
    """Where ``return <value>`` hands on a call of one of ``names``: -1 for the call itself,
    its index in a returned tuple, None when it does not."""
    if isinstance(value, ast.Call) and self_attribute(value.func) in names:
        return -1
    if isinstance(value, ast.Tuple):
        return next((k for k, e in enumerate(value.elts)
                     if isinstance(e, ast.Call) and self_attribute(e.func) in names), None)
    return None


def _target(targets: list[ast.expr], position: int | None) -> str | None:
    """The local an assignment binds the call's value (its ``position`` of a tuple) to."""
    if len(targets) != 1:
        return None
    target = targets[0]
    if position is not None:
        if not isinstance(target, ast.Tuple) or position >= len(target.elts):
            return None
        target = target.elts[position]
    return target.id if isinstance(target, ast.Name) else None


def _use(fn: ast.FunctionDef, local: str, after: int) -> ast.expr | None:
    """The first argument of a call in ``fn`` after line ``after`` that is ``local`` itself
    (positional or keyword), or None."""
    found = []
    for n in own_nodes(fn):
        if not isinstance(n, ast.Call):
            continue
        for arg in [*n.args, *(k.value for k in n.keywords)]:
            if isinstance(arg, ast.Name) and arg.id == local and arg.lineno > after:
                found.append(arg)
    return min(found, key=lambda a: (a.lineno, a.col_offset), default=None)
