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
    CLASS_NAME,
    ReaderIndex,
    class_node,
    close_bracket,
    defining_module,
    function_node,
    module_classes,
    parsed,
)
from derivgraph.audit.static.walk import own_nodes, self_attribute

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


_BACKEND_TEST = re.compile(r"\bbackend[ \t]*(?:==|is(?![ \t]+not)|in)[ \t]*(\(?)[ \t]*")
"""A branch on the backend (``if backend == Enum.MARLIN:``, ``elif backend in (Enum.A,
Enum.B):``): the classes named until the next such branch are those backends'."""
_TOP_LEVEL = re.compile(r"^(?:def|class|async[ \t]+def)\b", re.M)
_MEMBER = re.compile(r"\b([A-Z]\w*)\.([A-Z][A-Z0-9_]*)\b")


Owners = tuple[str, dict[str, tuple[frozenset[str], int]], set[tuple[int, int]]]
"""The backend enum, each class's (backends, last mention) and each branch test's (start, end)."""


def owners(index: ReaderIndex, module: str) -> Owners | None:
    """The backend enum a selector ``module`` branches on, each class's backends (the first
    branch naming it) and last mention there, and the (start, end) of each branch test; None
    when it has no backend branch (memoized)."""
    def find() -> Owners | None:
        tests = []  # (start, end of the test, enum members tested)
        for t in _BACKEND_TEST.finditer(module):
            end = close_bracket(module, t.end()) if t.group(1) else module.find(":", t.end())
            members = _MEMBER.findall(module[t.end():end if end > 0 else t.end()])
            if members:
                tests.append((t.start(), end, members))
        if not tests:
            return None
        enums: dict[str, int] = {}
        for _, _, members in tests:
            for e, _ in members:
                enums[e] = enums.get(e, 0) + 1
        enum = max(enums, key=lambda e: enums[e])
        known = module_classes(module) - {enum}
        owner: dict[str, tuple[frozenset[str], int]] = {}  # class -> (its backends, mention)
        for k, (_, start, members) in enumerate(tests):
            nxt = _TOP_LEVEL.search(module, start)
            end = min(tests[k + 1][0] if k + 1 < len(tests) else len(module),
                      nxt.start() if nxt else len(module))
            backends = frozenset(m for e, m in members if e == enum)
            mentions = {n.group(1): n.start() for n in CLASS_NAME.finditer(module, start, end)
                        if n.group(1) in known}
            for name, at in mentions.items():
                owner.setdefault(name, (backends, at))
        tested = {(s, e) for s, e, _ in tests}
        return enum, owner, tested

    return index.memo(f"backend owners {hash(module)}", find)


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
