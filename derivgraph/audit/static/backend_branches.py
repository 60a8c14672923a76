"""The backend branches of a selector module: which experts classes it maps each backend to.

A selector branches on its backend enum (``if backend == Enum.MARLIN: return [MarlinExperts]``,
``elif backend in (Enum.A, Enum.B):``): a class belongs to the first branch naming it
(:func:`backend_classes`, :func:`class_backends`). A storing class binds its experts class from
such a selector, a free function annotated to return classes (:func:`bound_selectors`).
"""

from __future__ import annotations

import re

from derivgraph.audit.static.source_tree import (
    CLASS_NAME,
    ReaderIndex,
    close_bracket,
    defining_module,
    module_classes,
)

__all__ = ["Owners", "backend_classes", "bound_selectors", "class_backends", "owners"]

_BINDS = re.compile(r"^[ \t]+(?:[\w.]+[ \t]*,[ \t]*)*self\.(\w+)(?:[ \t]*,[ \t]*[\w.]+)*[ \t]*"
                    r"=[ \t]*([a-z_]\w*)\(", re.M)
"""``self.a, self.b = func(`` (or ``self.b = func(``): attribute ``b`` bound from ``func``."""


def _returns_classes(module: str, function: str) -> bool:
    """Whether ``def function(`` in ``module`` is annotated to return classes (``type[``)."""
    m = re.search(rf"^[ \t]*def[ \t]+{re.escape(function)}[ \t]*\(", module, re.M)
    if m is None:
        return False
    arrow = module.find("->", m.end())
    nxt = re.compile(r"^[ \t]*(?:async[ \t]+)?def[ \t]", re.M).search(module, m.end())
    if arrow < 0 or (nxt is not None and nxt.start() < arrow):
        return False
    end = module.find(":\n", arrow)
    return "type[" in module[arrow:end if end > 0 else len(module)]


def bound_selectors(index: ReaderIndex, home: str,
                    body: str) -> list[tuple[str, str, str]]:
    """``(attribute, selector module text, selector)`` of each attribute the class ``body``
    binds from a free function annotated to return classes (``self.backend, self.experts_cls =
    select_backend(...)``)."""
    out = []
    for m in _BINDS.finditer(body):
        module = defining_module(index, m.group(2), home)
        if module and _returns_classes(module, m.group(2)):
            out.append((m.group(1), module, m.group(2)))
    return out


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
