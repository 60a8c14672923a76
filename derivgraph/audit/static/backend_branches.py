"""The backend branches of a selector module: which experts classes it maps each backend to.

A selector branches on its backend enum (``if backend == Enum.MARLIN: return [MarlinExperts]``,
``elif backend in (Enum.A, Enum.B):``): a class belongs to the first branch naming it
(:func:`backend_classes`, :func:`class_backends`). A storing class binds its experts class from
such a selector, a free function annotated to return classes (:func:`bound_selectors`).
"""

from __future__ import annotations

import ast
import re
from typing import NamedTuple

from derivgraph.audit.static.source_tree import (
    ReaderIndex,
    TextOffsets,
    class_node,
    defining_module,
    function_node,
    module_classes,
    parsed,
)
from derivgraph.audit.static.walk import own_nodes, self_attribute, walk

__all__ = ["Binding", "Owners", "backend_classes", "bound_selectors", "class_backends",
           "owners"]


class Binding(NamedTuple):
    """An attribute a storing class binds from a selector (``self.backend, self.experts_cls =
    select_backend(...)``: ``experts_cls``, the last ``self`` target), the text of the selector's
    module and the selector's name."""

    attr: str
    module: str
    selector: str


def bound_selectors(index: ReaderIndex, home: str, cls: str | None) -> tuple[Binding, ...]:
    """The :class:`Binding` of each attribute class ``cls`` of ``home`` binds from a free
    function annotated to return classes (``-> tuple[Backend, type[Experts]]``), in text order
    (memoized); its nested classes' bindings are theirs, not its own."""
    def find() -> tuple[Binding, ...]:
        node = class_node(index, home, cls) if cls else None
        if node is None:
            return ()
        found = []
        for n in own_nodes(node, (ast.ClassDef,)):
            if not (isinstance(n, ast.Assign) and len(n.targets) == 1):
                continue
            attr, selector = _bound_attribute(n.targets[0]), _selector_name(n.value)
            if attr is None or selector is None:
                continue
            module = defining_module(index, selector, home)
            if module and _returns_classes(index, module, selector):
                found.append((n.lineno, n.col_offset, Binding(attr, module, selector)))
        return tuple(b for _, _, b in sorted(found, key=lambda f: f[:2]))

    return index.memo(f"bound selectors {hash(home)} {cls}", find)


def _bound_attribute(target: ast.expr) -> str | None:
    """The attribute an assignment target binds on ``self`` (``self.x``; the last ``self``
    one of ``self.a, layer.b, self.x``), None when it binds none or a target is not a dotted
    name (``x[0]``, ``*rest``)."""
    names = target.elts if isinstance(target, ast.Tuple) else [target]
    if not all(_dotted(e) for e in names):
        return None
    held = [a for e in names if (a := self_attribute(e)) is not None]
    return held[-1] if held else None


def _dotted(node: ast.expr) -> bool:
    """Whether ``node`` is a name or a dotted name (``x``, ``self.x``, ``layer.a.b``)."""
    while isinstance(node, ast.Attribute):
        node = node.value
    return isinstance(node, ast.Name)


def _selector_name(value: ast.expr) -> str | None:
    """The free function a bound value calls (``select_backend(...)``, also indexed:
    ``select(...)[0]``) when its name is lowercase or private, else None."""
    while isinstance(value, ast.Subscript):
        value = value.value
    if isinstance(value, ast.Call) and isinstance(value.func, ast.Name):
        first = value.func.id[:1]
        return value.func.id if "a" <= first <= "z" or first == "_" else None
    return None


def _returns_classes(index: ReaderIndex, module: str, function: str) -> bool:
    """Whether the function ``function`` of selector ``module`` is annotated to return classes
    (``type[`` in its return annotation)."""
    fn = function_node(parsed(index, module), function)
    return fn is not None and fn.returns is not None and "type[" in ast.unparse(fn.returns)


_MEMBER = re.compile(r"[A-Z][A-Z0-9_]*")
"""An enum member's name (``MARLIN``, ``FLASHINFER_TRTLLM``)."""


Owners = tuple[str, dict[str, tuple[frozenset[str], int]], set[tuple[int, int]]]
"""The backend enum, each class's (backends, last mention) and each branch test's (start, end),
as offsets in the module's text."""


def owners(index: ReaderIndex, module: str) -> Owners | None:
    """The backend enum a selector ``module`` branches on (``if backend == Enum.MARLIN:``,
    ``elif backend in (Enum.A, Enum.B):``, the enum its tests name most), each class's backends
    (the first branch naming it: the classes named after a test until the next test or
    top-level ``def``/``class`` are those backends') and its last mention there, and the (start,
    end) of each branch test; None when it has no backend branch (memoized). Read with
    :mod:`ast`: a name in a comment or a string is no mention."""
    def find() -> Owners | None:
        tree = parsed(index, module)
        if tree is None:
            return None
        at = TextOffsets(module)
        tests = []  # (start, end of the test, enum members tested)
        for n in walk(tree):
            if not (isinstance(n, ast.Compare) and _is_backend(n.left)
                    and isinstance(n.ops[0], (ast.Eq, ast.Is, ast.In))):
                continue
            members = sorted((at.start(m), m.value.id, m.attr) for m in walk(n.comparators[0])
                             if isinstance(m, ast.Attribute) and isinstance(m.value, ast.Name)
                             and "A" <= m.value.id[:1] <= "Z" and _MEMBER.fullmatch(m.attr))
            if members:
                left = at.end(n.left) - len("backend")
                tests.append((left, at.end(n), [(e, m) for _, e, m in members]))
        if not tests:
            return None
        tests.sort(key=lambda t: t[0])
        enums: dict[str, int] = {}
        for _, _, members in tests:
            for e, _ in members:
                enums[e] = enums.get(e, 0) + 1
        enum = max(enums, key=lambda e: enums[e])
        known = module_classes(index, module) - {enum}
        tops = [at.start(s) for s in tree.body
                if isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))]
        names = sorted(_mentions(tree, known, at))
        owner: dict[str, tuple[frozenset[str], int]] = {}  # class -> (its backends, mention)
        for k, (_, start, members) in enumerate(tests):
            after = tests[k + 1][0] if k + 1 < len(tests) else len(module)
            end = min([after] + [t for t in tops if t >= start])
            backends = frozenset(m for e, m in members if e == enum)
            mentions = {name: offset for offset, name in names if start <= offset < end}
            for name, offset in mentions.items():
                owner.setdefault(name, (backends, offset))
        tested = {(s, e) for s, e, _ in tests}
        return enum, owner, tested

    return index.memo(f"backend owners {hash(module)}", find)


def _is_backend(node: ast.expr) -> bool:
    """``backend`` or ``<x>.backend`` (``self.backend``)."""
    return (isinstance(node, ast.Name) and node.id == "backend") or (
        isinstance(node, ast.Attribute) and node.attr == "backend")


def _mentions(tree: ast.Module, known: frozenset[str],
              at: TextOffsets) -> list[tuple[int, str]]:
    """(offset, name) of each mention of a ``known`` capitalized class in ``tree`` (not a
    private ``_Schema``): a name, an attribute (``mod.MarlinExperts``) or an imported name
    (``from m import MarlinExperts``)."""
    known = frozenset(k for k in known if "A" <= k[:1] <= "Z")
    out = []
    for n in walk(tree):
        if isinstance(n, ast.Name) and n.id in known:
            out.append((at.start(n), n.id))
        elif isinstance(n, ast.Attribute) and n.attr in known:
            out.append((at.end(n) - len(n.attr), n.attr))
        elif isinstance(n, (ast.Import, ast.ImportFrom)):
            out.extend((at.start(a), a.name) for a in n.names if a.name in known)
    return out


def backend_classes(index: ReaderIndex, module: str, member: str) -> tuple[str, ...]:
    """The classes selector ``module`` maps its backend ``member`` to (``if backend ==
    Enum.AITER: return [AiterExperts]``), in the order it lists them; empty when none."""
    found = owners(index, module)
    if found is None:
        return ()
    _, owner, _ = found
    return tuple(sorted((c for c in owner if member in owner[c][0]), key=lambda c: owner[c][1]))


def class_backends(index: ReaderIndex, module: str, cls: str) -> frozenset[str]:
    """The backend members selector ``module`` maps class ``cls`` to (the first branch naming
    it, :func:`backend_classes`); empty when none."""
    found = owners(index, module)
    return found[1][cls][0] if found is not None and cls in found[1] else frozenset()
