"""The experts classes a storing class binds itself, outside its selector's choice.

A class that keeps its experts class in an attribute it binds from a selector (``self.backend,
self.experts_cls = select_backend(moe)``, :func:`.selection.bound_selectors`) may bind that
attribute other ways too: directly (``else: self.experts_cls = MarlinExperts``), or from a
backend it fixes itself (``self.backend = Enum.AITER`` then ``self.experts_cls =
backend_to_kernel_cls(self.backend)[0]``). Which binding serves a stored config:

* a store in a method the class calls only under tests of its own flags (``if
  self.is_gfx942: self._setup_gfx942(layer)``) is served by the bindings under a test naming one
  of those flags;
* otherwise by every binding, and then the class's own choice serves it when its fall-through
  binding (the last one under ``else:``, or unconditional) is one: a selector bound only under
  a special test (``if moe.moe_backend == "b12x":``) does not serve the default path.

When the serving bindings are the class's own, :func:`bound_classes` gives the classes they
name (a direct class; a fixed backend's classes in the selector module,
:func:`.selection.backend_classes`): these, not the selector's order, rank the consumers.
"""

from __future__ import annotations

import re

from derivgraph.audit.static.selection import (
    ReaderIndex,
    backend_classes,
    bound_selectors,
    class_body,
    defining_module,
)

__all__ = ["bound_classes"]

_TEST = re.compile(r"(?:el)?if\b|else\b")
_CLASS = re.compile(r"(?!None\b|True\b|False\b)[A-Z]\w*")
_FLAG = re.compile(r"\bself\.(\w+)")
_FIXED = re.compile(r"^[ \t]*([a-z_]\w*)\((?:self\.(\w+)|([A-Z]\w*)\.([A-Z]\w*))\)(\[0\])?$")
"""``backend_to_kernel_cls(self.backend)[0]`` or ``f(Enum.MEMBER)``: a fixed backend's class."""


def _test_of(body: str, pos: int) -> str | None:
    """The ``if``/``elif``/``else`` line governing the statement at ``pos`` (its nearest
    enclosing line at a smaller indent), or None when it is unconditional in its method."""
    start = body.rfind("\n", 0, pos) + 1
    line = body[start:body.find("\n", start)]
    indent = len(line) - len(line.lstrip(" \t"))
    for line in reversed(body[:start].splitlines()):
        stripped = line.lstrip(" \t")
        own = len(line) - len(stripped)
        if not stripped or stripped.startswith(("#", ")", "]", "}")) or own >= indent:
            continue
        if _TEST.match(stripped):
            return stripped
        if stripped.startswith(("def ", "async def ")):
            return None
        indent = own
    return None


def _flags(body: str, method: str) -> frozenset[str]:
    """The ``self`` flags that every call of ``self.<method>(`` in ``body`` is tested under
    (empty when a call is untested or there is none)."""
    out: set[str] = set()
    calls = list(re.finditer(rf"\bself\.{re.escape(method)}\(", body)) if method else []
    for call in calls:
        test = _test_of(body, call.start())
        flags = set(_FLAG.findall(test or ""))
        if not flags or test is None or test.startswith("else"):
            return frozenset()
        out |= flags
    return frozenset(out)


def bound_classes(index: ReaderIndex, home: str, cls: str | None,
                  method: str = "") -> tuple[str, ...] | None:
    """The classes class ``cls`` of ``home`` binds itself for the config its method
    ``method`` stores (module docstring), in text order; None when the selector serves it (its
    order ranks), and empty when the serving bindings name no class that resolves (a call the
    audit cannot follow): the consumer is then not resolved."""
    body = class_body(home, cls) if cls else ""
    if not body:
        return None
    found = bound_selectors(index, home, body)
    if not found:
        return None
    held = "|".join(map(re.escape, {h for h, _, _ in found}))
    chosen = re.compile(rf"(?:{'|'.join(re.escape(f) for _, _, f in found)})\(")
    bindings = [(m.start(), m.group(2).strip(), _test_of(body, m.start())) for m in re.finditer(
        rf"^[ \t]+(?:[\w.]+[ \t]*,[ \t]*)*self\.({held})(?:[ \t]*,[ \t]*[\w.]+)*[ \t]*"
        r"=(?!=)[ \t]*([^\n]+)$", body, re.M)]
    own = {at: _own(body[:at], value) for at, value, _ in bindings}
    flags = _flags(body, method)
    if flags:
        bindings = [b for b in bindings if b[2] and flags & set(_FLAG.findall(b[2]))]
    else:
        fall_through = [b for b in bindings if b[2] is None or b[2].startswith("else")]
        if not fall_through or own[fall_through[-1][0]] is None:
            return None
    if all(own[at] is None and chosen.match(value) for at, value, _ in bindings):
        return None  # only the selector binds it there: its order ranks
    out: list[str] = []
    for at, value, _ in bindings:
        if _CLASS.fullmatch(value):
            out.append(value)
        elif (fixed := own[at]) is not None:
            module = defining_module(index, fixed[0], home)
            found = backend_classes(index, module, fixed[1]) if module else ()
            out.extend(found[:1] if fixed[2] else found)
    return tuple(dict.fromkeys(out))


def _own(before: str, value: str) -> tuple[str, str, bool] | None:
    """Whether a bound ``value`` is the class's own choice: a class (``("", "", False)``), or
    a fixed backend's (``(function, member, indexed)``: ``f(self.backend)[0]`` after
    ``self.backend = Enum.MEMBER`` in ``before``, or ``f(Enum.MEMBER)``); None otherwise."""
    if _CLASS.fullmatch(value):
        return "", "", False
    fixed = _FIXED.match(value)
    if fixed is None:
        return None
    member = fixed.group(4)
    if member is None:
        found = re.findall(rf"^[ \t]+self\.{re.escape(fixed.group(2))}[ \t]*=[ \t]*[A-Z]\w*"
                           r"\.([A-Z]\w*)[ \t]*$", before, re.M)
        member = found[-1] if found else None
    return (fixed.group(1), member, fixed.group(5) is not None) if member else None
