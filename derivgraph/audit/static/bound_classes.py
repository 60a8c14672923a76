"""The experts classes a storing class binds itself, outside its selector's choice.

A class that keeps its experts class in an attribute it binds from a selector (``self.backend,
self.experts_cls = select_backend(moe)``, :func:`.backend_branches.bound_selectors`) may bind that
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
:func:`.backend_branches.backend_classes`): these, not the selector's order, rank the consumers.
The class body is read with :mod:`ast` (:func:`.source_tree.class_node`).
"""

from __future__ import annotations

import ast
from dataclasses import dataclass

from derivgraph.audit.static.backend_branches import Binding, backend_classes
from derivgraph.audit.static.source_tree import ReaderIndex, class_node, defining_module
from derivgraph.audit.static.walk import children, self_attribute, walk

__all__ = ["bound_classes", "named_class"]


@dataclass(frozen=True)
class _Test:
    """The ``if``/``elif`` or ``else`` a statement sits under: the ``self`` attributes its
    condition reads (none for ``else``)."""

    is_else: bool
    flags: frozenset[str]


@dataclass(frozen=True)
class _Fixed:
    """A bound value that is a fixed backend's classes: ``function(Enum.MEMBER)`` (``[0]``
    when ``indexed``)."""

    function: str
    member: str
    indexed: bool


_DIRECT = _Fixed("", "", False)
"""A bound value that names a class directly."""


def _flags_of(test: ast.expr) -> frozenset[str]:
    """The ``self`` attributes a condition reads (``self.is_gfx942``, ``self.moe.x``)."""
    return frozenset(a for n in walk(test) if (a := self_attribute(n)) is not None)


def _tests(node: ast.ClassDef) -> dict[int, _Test | None]:
    """``id(statement or expression)`` -> the ``if``/``elif``/``else`` governing it inside its
    method (None: unconditional there), for every node in the methods of class ``node``."""
    out: dict[int, _Test | None] = {}

    def visit(n: ast.AST, test: _Test | None) -> None:
        out[id(n)] = test
        if isinstance(n, ast.If):
            visit(n.test, test)
            for s in n.body:
                visit(s, _Test(False, _flags_of(n.test)))
            is_elif = len(n.orelse) == 1 and isinstance(n.orelse[0], ast.If) and \
                n.orelse[0].col_offset == n.col_offset
            for s in n.orelse:
                visit(s, test if is_elif else _Test(True, frozenset()))
            return
        for c in children(n):
            visit(c, None if isinstance(c, (ast.FunctionDef, ast.AsyncFunctionDef)) else test)

    for n in node.body:  # a method's own statements are unconditional there
        visit(n, None)
    return out


def _method_flags(nodes: list[ast.AST], tests: dict[int, _Test | None],
                  method: str) -> frozenset[str]:
    """The ``self`` flags that every call of ``self.<method>(`` among a class's ``nodes`` is
    tested under (empty when a call is untested or there is none)."""
    out: set[str] = set()
    calls = [n for n in nodes if isinstance(n, ast.Call)
             and self_attribute(n.func) == method] if method else []
    for call in calls:
        test = tests.get(id(call))
        if test is None or test.is_else or not test.flags:
            return frozenset()
        out |= test.flags
    return frozenset(out)


def _bindings(nodes: list[ast.AST], held: frozenset[str]) -> list[ast.Assign]:
    """The assignments among a class's ``nodes`` that bind one of the ``held`` attributes
    (``self.x = ...``, ``self.a, self.x = ...``), in text order."""
    found = []
    for n in nodes:
        if not (isinstance(n, ast.Assign) and len(n.targets) == 1):
            continue
        target = n.targets[0]
        names = target.elts if isinstance(target, ast.Tuple) else [target]
        if any(self_attribute(e) in held for e in names):
            found.append(n)
    return sorted(found, key=lambda n: (n.lineno, n.col_offset))


def named_class(value: ast.expr) -> str | None:
    """A class named directly (``MarlinExperts``: a capitalized name; not
    ``None``/``True``/``False``, constants), else None."""
    return value.id if isinstance(value, ast.Name) and value.id[:1].isupper() else None


def _chooses(value: ast.expr, selectors: frozenset[str]) -> bool:
    """Whether ``value`` is a call of one of the ``selectors`` (``select_backend(...)``, also
    indexed)."""
    while isinstance(value, ast.Subscript):
        value = value.value
    return (isinstance(value, ast.Call) and isinstance(value.func, ast.Name)
            and value.func.id in selectors)


def _fixed_backends(nodes: list[ast.AST]) -> list[tuple[int, str, str]]:
    """``(line, attribute, member)`` of each ``self.attr = Enum.MEMBER`` among a class's
    ``nodes`` (in :func:`ast.walk` order)."""
    return [(n.lineno, attr, n.value.attr) for n in nodes
            if isinstance(n, ast.Assign) and len(n.targets) == 1
            and (attr := self_attribute(n.targets[0])) is not None
            and isinstance(n.value, ast.Attribute) and isinstance(n.value.value, ast.Name)
            and n.value.value.id[:1].isupper() and n.value.attr[:1].isupper()]


def _own(value: ast.expr, line: int, fixed: list[tuple[int, str, str]]) -> _Fixed | None:
    """Whether a bound ``value`` on ``line`` is the class's own choice: a class
    (:data:`_DIRECT`), or a fixed backend's (``f(self.backend)[0]`` after ``self.backend =
    Enum.MEMBER`` above it in the class, or ``f(Enum.MEMBER)``); None otherwise."""
    if named_class(value):
        return _DIRECT
    indexed = (isinstance(value, ast.Subscript) and isinstance(value.slice, ast.Constant)
               and value.slice.value == 0 and not isinstance(value.slice.value, bool))
    call = value.value if indexed else value
    if not (isinstance(call, ast.Call) and isinstance(call.func, ast.Name)
            and (call.func.id[:1].islower() or call.func.id[:1] == "_")
            and len(call.args) == 1 and not call.keywords):
        return None
    arg = call.args[0]
    if (held := self_attribute(arg)) is not None:
        found = [m for at, attr, m in fixed if attr == held and at < line]
        member = found[-1] if found else None
    elif (isinstance(arg, ast.Attribute) and isinstance(arg.value, ast.Name)
          and arg.value.id[:1].isupper() and arg.attr[:1].isupper()):
        member = arg.attr
    else:
        return None
    return _Fixed(call.func.id, member, indexed) if member else None


@dataclass(frozen=True)
class _Bound:
    """What a class binds its held attributes to, read once per (module, class): every node
    of the class, the test each sits under, and each binding's value, test and own choice
    (:func:`_own`), in text order."""

    nodes: list[ast.AST]
    tests: dict[int, _Test | None]
    bindings: list[tuple[ast.expr, _Test | None]]
    own: list[_Fixed | None]


def _bound(node: ast.ClassDef, held: frozenset[str]) -> _Bound:
    """The :class:`_Bound` of class ``node`` for its ``held`` attributes (its caller memoizes
    it per module and class)."""
    tests = _tests(node)
    nodes = list(walk(node))  # every node of the class, walked once for the searches below
    fixed = _fixed_backends(nodes)
    assigns = _bindings(nodes, held)
    return _Bound(nodes, tests, [(b.value, tests.get(id(b))) for b in assigns],
                  [_own(b.value, b.lineno, fixed) for b in assigns])


def bound_classes(index: ReaderIndex, home: str, cls: str | None,
                  found: tuple[Binding, ...], method: str = "") -> tuple[str, ...] | None:
    """The classes class ``cls`` of ``home`` binds itself for the config its method
    ``method`` stores (module docstring), in text order; None when the selector serves it (its
    order ranks), and empty when the serving bindings name no class that resolves (a call the
    audit cannot follow): the consumer is then not resolved. ``found``: the class's
    :func:`.backend_branches.bound_selectors` (its caller reads them once)."""
    node = class_node(index, home, cls) if cls and found else None
    if node is None:
        return None
    held = frozenset(b.attr for b in found)
    selectors = frozenset(b.selector for b in found)
    facts = index.memo(f"bound bindings {hash(home)} {cls}",
                       lambda: _bound(node, held))
    nodes, tests, bindings, own = facts.nodes, facts.tests, facts.bindings, facts.own
    flags = _method_flags(nodes, tests, method)
    if flags:
        serving = [k for k, (_, test) in enumerate(bindings)
                   if test is not None and flags & test.flags]
    else:
        fall_through = [k for k, (_, test) in enumerate(bindings) if test is None or test.is_else]
        if not fall_through or own[fall_through[-1]] is None:
            return None
        serving = list(range(len(bindings)))
    if all(own[k] is None and _chooses(bindings[k][0], selectors) for k in serving):
        return None  # only the selector binds it there: its order ranks
    out: list[str] = []
    for k in serving:
        if (name := named_class(bindings[k][0])) is not None:
            out.append(name)
        elif (choice := own[k]) is not None:
            module = defining_module(index, choice.function, home)
            classes = backend_classes(index, module, choice.member) if module else ()
            out.extend(classes[:1] if choice.indexed else classes)
    return tuple(dict.fromkeys(out))
