"""A faster ``ast.walk``: the same nodes in the same order, expression contexts left out.

``ast.walk`` goes through ``ast.iter_child_nodes`` and ``ast.iter_fields`` (two generators per
node) and yields the ``Load``/``Store``/``Del`` leaf under every name, attribute and subscript,
which no rule of the static audit looks at (the rules read ``node.ctx`` on the node itself).
Walking the trees is a large part of the audit's time; these walk only the fields that can hold
nodes, per node type, computed once. :func:`self_attribute` is the one reading of a
``self.<attr>`` node the rules test while they walk.
"""

from __future__ import annotations

import ast
from collections import deque
from collections.abc import Iterator

__all__ = ["NESTED_SCOPES", "NODE_FIELDS", "children", "fields_of", "own_nodes", "self_attribute",
           "walk"]

NODE_FIELDS: dict[type, tuple[str, ...]] = {}
"""Node type -> its fields that can hold nodes (:func:`fields_of` fills it), for walks that
inline :func:`children`."""


_NOT_NODES = frozenset({"ctx", "id", "attr", "arg", "kind", "module", "level", "is_async",
                        "conversion", "asname", "type_comment", "simple", "rest", "kwd_attrs"})
"""Fields that never hold a node: expression contexts, identifiers, flags."""
_NAMED = frozenset({"name", "names", "value"})
"""Fields that hold a node for some types only (``Constant.value``, ``Global.names``...)."""
_NAMES_ONLY = {(ast.Constant, "value"), (ast.Global, "names"), (ast.Nonlocal, "names"),
               (ast.FunctionDef, "name"), (ast.AsyncFunctionDef, "name"), (ast.ClassDef, "name"),
               (ast.alias, "name"), (ast.ExceptHandler, "name"), (ast.MatchAs, "name"),
               (ast.MatchStar, "name")}


def fields_of(kind: type) -> tuple[str, ...]:
    """The fields of node type ``kind`` that can hold nodes (computed once per type)."""
    found = NODE_FIELDS.get(kind)
    if found is None:
        found = NODE_FIELDS[kind] = tuple(
            f for f in getattr(kind, "_fields", ())
            if f not in _NOT_NODES and (f not in _NAMED or (kind, f) not in _NAMES_ONLY))
    return found


def children(node: ast.AST) -> list[ast.AST]:
    """``ast.iter_child_nodes(node)`` as a list, expression contexts left out."""
    out: list[ast.AST] = []
    kind = type(node)
    names = NODE_FIELDS.get(kind)
    node_type = ast.AST
    for name in names if names is not None else fields_of(kind):
        value = getattr(node, name, None)
        if type(value) is list:
            out.extend([v for v in value if isinstance(v, node_type)])
        elif isinstance(value, node_type):
            out.append(value)
    return out


def walk(node: ast.AST) -> Iterator[ast.AST]:
    """``ast.walk(node)`` (breadth first, the same order), expression contexts left out."""
    todo = deque([node])
    pop, push, extend, fields, node_type = (todo.popleft, todo.append, todo.extend, NODE_FIELDS,
                                            ast.AST)
    while todo:
        node = pop()
        kind = type(node)
        names = fields.get(kind)
        for name in names if names is not None else fields_of(kind):
            value = getattr(node, name, None)
            if type(value) is list:
                extend([v for v in value if isinstance(v, node_type)])
            elif isinstance(value, node_type):
                push(value)
        yield node


NESTED_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)
"""The nodes that open a scope of their own: a function's own code stops at them."""


def own_nodes(node: ast.AST, nested: tuple[type, ...] = NESTED_SCOPES, *,
              breadth_first: bool = False, with_root: bool = False) -> Iterator[ast.AST]:
    """The nodes under ``node`` (``node`` first with ``with_root``), not entering the nodes of
    the ``nested`` types nor yielding them, expression contexts left out. Depth first (the last
    child first), or breadth first (``ast.walk``'s order)."""
    if with_root:
        yield node
    todo = deque([c for c in children(node) if not isinstance(c, nested)])
    pop = todo.popleft if breadth_first else todo.pop
    push, fields, node_type = todo.append, NODE_FIELDS, ast.AST
    while todo:
        cur = pop()
        yield cur
        kind = type(cur)  # :func:`children` inlined: a call per node was a third of the walk
        names = fields.get(kind)
        for name in names if names is not None else fields_of(kind):
            value = getattr(cur, name, None)
            if type(value) is list:
                for child in value:
                    if isinstance(child, node_type) and not isinstance(child, nested):
                        push(child)
            elif isinstance(value, node_type) and not isinstance(value, nested):
                push(value)


def self_attribute(node: ast.AST) -> str | None:
    """``x`` of ``self.x`` (an attribute straight on the name ``self``: not ``cls.x``,
    ``layer.x`` nor ``self.a.x``), else None."""
    return node.attr if (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name)
                         and node.value.id == "self") else None
