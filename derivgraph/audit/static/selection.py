"""Which experts class a stored config reaches, read from the code that selects and builds it.

A post-load step stores a config (``self.moe_quant_config = self.get_fused_moe_quant_config(
layer)``) and hands it to a kernel factory with the class that will keep it
(``make_kernel(quant_config=self.moe_quant_config, experts_cls=self.experts_cls)``). That class
was bound by the storing class from a *selector*, a free function annotated to return classes
(``self.backend, self.experts_cls = select_backend(...)`` with ``-> tuple[Backend,
type[Experts]]``), or directly (``self.experts_cls = CutlassExperts``). The consumers the config
can reach are the classes the selector's module defines or imports (:func:`selected_classes`).

Among them, the one built for the config's default construction reads the fields the building
function's fall-through ``return`` fills (the return reached when none of its backend tests holds,
:func:`default_fields`): a class built for another branch reads fewer of them
(:meth:`.readers.ReaderIndex.coverage`). Among classes that fit it equally, the one whose backend
the selector's module lists first in its priority order comes first (:func:`backend_order`: the
backend vLLM tries first on a device-graph platform, not a CPU, XPU or ROCm-only list).

:func:`serving_classes` is the one home of "the classes that can serve this config": it
combines the selector's order with the storing class's own binding (:mod:`.bound_classes`),
the selector's compatibility test (:mod:`.rejected`), the storing method's failing conversion
(:mod:`.preconditions`) and the selector's key filter (:mod:`.quant_keys`).
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterable
from typing import NamedTuple

from derivgraph.audit.static.backend_branches import (
    Binding,
    bound_selectors,
    class_backends,
    owners,
)
from derivgraph.audit.static.bound_classes import bound_classes, named_class
from derivgraph.audit.static.preconditions import failing_backends
from derivgraph.audit.static.quant_keys import keyed_out
from derivgraph.audit.static.rejected import rejected_classes
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

__all__ = [
    "NO_CONSTRUCTION",
    "Construction",
    "backend_order",
    "construction_classes",
    "default_fields",
    "selected_classes",
    "serving_classes",
]


def selected_classes(index: ReaderIndex, home: str, cls: str | None,
                     found: tuple[Binding, ...], attr: str = "") -> frozenset[str]:
    """The experts classes class ``cls`` of the storing file ``home`` selects (module
    docstring): a class named directly beside the stored config ``self.<attr>`` in a call it
    hands the config to (``make_kernel(quant_config=self.<attr>, experts_cls=MarlinExperts)``);
    else the classes defined or imported by the module of each free function it binds an
    attribute from that is annotated to return classes (``found``: its
    :func:`.backend_branches.bound_selectors`), and the class names it binds that attribute to
    directly. Empty when it binds none. The class is read with :mod:`ast`, less its nested
    classes (their ``self`` is another object)."""
    if not cls:
        return frozenset()

    def select() -> frozenset[str]:
        node = class_node(index, home, cls)
        if node is None:
            return frozenset()
        nodes = list(own_nodes(node, (ast.ClassDef,)))
        named = _named_beside(nodes, attr) if attr else frozenset()
        if named:  # only the names the storing module defines or imports are classes
            named &= module_classes(index, home)
        if named:
            return named
        names: set[str] = set()
        for b in found:
            names |= module_classes(index, b.module)
        held = {b.attr for b in found}
        names.update(name for n in nodes if isinstance(n, ast.Assign) and len(n.targets) == 1
                     and self_attribute(n.targets[0]) in held
                     and (name := named_class(n.value)) is not None)
        return frozenset(names)

    return index.memo(f"selected {hash(home)} {cls} {attr}", select)


_OTHER_PLATFORM = re.compile(r"is_(?:cpu|xpu|rocm|tpu)")
"""A test for a platform without CUDA graphs of the kind the audit is about (its own list)."""


def backend_order(index: ReaderIndex, module: str) -> tuple[str, ...]:
    """The experts classes a selector ``module`` maps its backends to (``if backend ==
    Enum.MARLIN: return [MarlinExperts]``; a class belongs to the first branch naming it, and
    within one branch the last mention orders them: the list it returns), in the order of the
    first list or tuple of that enum's members the module states outside a branch test
    (``[Enum.RDNA3, Enum.MARLIN, ...]``: its priority order, the backend tried first first),
    skipping a list returned under a CPU, XPU or ROCm test (``if current_platform.is_cpu():
    return [...]``). Empty when the module states none."""
    def order() -> tuple[str, ...]:
        found = owners(index, module)
        if found is None:
            return ()
        enum, owner, tested = found
        for members in _member_lists(index, module, enum, tested):
            ranked = sorted((c for c in owner if owner[c][0] & set(members)),
                            key=lambda c: (min(members.index(b) for b in owner[c][0]
                                               if b in members), owner[c][1]))
            if ranked:
                return tuple(ranked)
        return ()

    return index.memo(f"backend order {hash(module)}", order)


def _member_lists(index: ReaderIndex, module: str, enum: str,
                  tested: set[tuple[int, int]]) -> list[list[str]]:
    """The members of each list or tuple (or call's arguments) that holds only ``enum``
    members (two or more), in text order, less those of a branch test (``tested``: (start,
    end) of each) and those stated right under a one-line platform test (``if
    current_platform.is_cpu():``, :data:`_OTHER_PLATFORM`). Read with :mod:`ast`."""
    tree = parsed(index, module)
    if tree is None:
        return []
    at = TextOffsets(module)
    platform_lines = {n.body[0].lineno for n in walk(tree) if isinstance(n, ast.If)
                      and n.test.end_lineno == n.body[0].lineno - 1 and any(
                          isinstance(c, ast.Call) and isinstance(c.func, ast.Attribute)
                          and _OTHER_PLATFORM.fullmatch(c.func.attr) for c in walk(n.test))}
    found = []
    for n in walk(tree):
        elts = n.elts if isinstance(n, (ast.List, ast.Tuple)) else \
            n.args if isinstance(n, ast.Call) and not n.keywords else None
        if not elts or len(elts) < 2 or not all(
                isinstance(e, ast.Attribute) and isinstance(e.value, ast.Name)
                and e.value.id == enum and e.attr[:1].isupper() for e in elts):
            continue
        start = at.start(n) if not isinstance(n, ast.Call) else at.end(n.func)
        if any(s <= start < e for s, e in tested) or n.lineno in platform_lines:
            continue
        found.append((start, [e.attr for e in elts]))
    return [members for _, members in sorted(found, key=lambda f: f[0])]


def _named_beside(nodes: list[ast.AST], attr: str) -> frozenset[str]:
    """The capitalized names passed as keyword values (``experts_cls=MarlinExperts``, also
    ``experts_cls=Marlin(...)``) in the calls among a class's ``nodes`` that take
    ``self.<attr>`` as a keyword argument (the caller keeps those its module defines or
    imports)."""
    out: set[str] = set()
    for n in nodes:
        if not (isinstance(n, ast.Call) and any(k.arg and self_attribute(k.value) == attr
                                                for k in n.keywords)):
            continue
        for k in n.keywords:
            value = k.value.func if isinstance(k.value, ast.Call) else k.value
            if k.arg and (name := named_class(value)) is not None:
                out.add(name)
    return frozenset(out)


class Construction(NamedTuple):
    """The fields of a config's default construction (``filled``: its building function's
    fall-through ``return``) and those only its other branches fill (``foreign``): a class
    built for another branch reads the latter; ``order``: the classes its selector tries first
    first (:func:`backend_order`), which ranks classes that fit it equally; ``bound``: whether
    those are the classes the storing class binds itself."""

    filled: frozenset[str] = frozenset()
    foreign: frozenset[str] = frozenset()
    order: tuple[str, ...] = ()
    bound: bool = False
    """The classes are those the storing class binds itself (:mod:`.bound_classes`): when none
    of them reads the field, the consumer is not resolved (no other class is named)."""


NO_CONSTRUCTION = Construction()
"""No default construction known: every class reads it equally."""


def default_fields(index: ReaderIndex, function: str, home: str) -> Construction:
    """The :class:`Construction` of the building function ``function``: the fields its
    fall-through ``return`` fills (``return make_config(g1_alphas=..., a1_gscale=...)``, a
    statement of the function's own body after its ``if backend == ...: return ...`` branches,
    else the last return of a final ``else:``) and those only its other ``return`` calls fill,
    looked up in the module ``home`` imports it from (or ``home``); empty when there is no
    fall-through return. Read with :mod:`ast`."""
    if not function:
        return Construction()

    def fields() -> Construction:
        module = defining_module(index, function, home) or home
        tree = parsed(index, module)
        fn = function_node(tree, function) if tree is not None else None
        if fn is None:
            return Construction()
        params = _parameters(fn)
        calls = sorted((n for n in own_nodes(fn) if isinstance(n, ast.Return)
                        and isinstance(n.value, ast.Call) and _dotted(n.value.func)),
                       key=lambda n: (n.lineno, n.col_offset))
        last = [n for n in calls if n in fn.body] or _final_else_returns(fn, calls)
        if not last:
            return Construction()
        filled = _call_keywords(last[-1].value, params)
        others = frozenset().union(*(_call_keywords(n.value, params) for n in calls
                                     if n is not last[-1]))
        return Construction(filled, others - filled)

    return index.memo(f"default fields {function} {hash(home)}", fields)


def _dotted(node: ast.expr) -> bool:
    """Whether ``node`` is a name or a dotted chain of names (``make_config``, ``mk.cfg``)."""
    while isinstance(node, ast.Attribute):
        node = node.value
    return isinstance(node, ast.Name)


def _final_else_returns(fn: ast.FunctionDef, calls: list[ast.Return]) -> list[ast.Return]:
    """The returns of ``calls`` inside the final ``else:`` of an ``if``/``elif`` chain that is
    the function's last statement (an ``elif`` is an ``If`` alone in ``orelse`` at the same
    column)."""
    node = fn.body[-1]
    if not isinstance(node, ast.If):
        return []
    while (len(node.orelse) == 1 and isinstance(node.orelse[0], ast.If)
           and node.orelse[0].col_offset == node.col_offset):
        node = node.orelse[0]
    inside = {id(n) for stmt in node.orelse for n in walk(stmt)}
    return [n for n in calls if id(n) in inside]


def _call_keywords(call: ast.Call, parameters: frozenset[str] = frozenset()) -> frozenset[str]:
    """The keyword names of ``call``; when they are all private descriptors (``_w1=QuantDesc(
    dtype, shape, w1_scale, ...)``), the building function's ``parameters`` they are made of
    instead (its callers fill the config through those names: ``w1_scale=layer.w13_scales``)."""
    names = frozenset(k.arg for k in call.keywords if k.arg)
    if names and all(n.startswith("_") for n in names):
        used = {n.id for a in [*call.args, *(k.value for k in call.keywords)]
                for n in walk(a) if isinstance(n, ast.Name)}
        return parameters & used
    return names


def _parameters(fn: ast.FunctionDef) -> frozenset[str]:
    """The parameter names of function ``fn``."""
    a = fn.args
    return frozenset(x.arg for x in [*a.posonlyargs, *a.args, *a.kwonlyargs,
                                     *(v for v in (a.vararg, a.kwarg) if v)])


def serving_classes(index: ReaderIndex, function: str, home: str, cls: str | None,
                    attr: str = "", method: str = "") -> tuple[frozenset[str], Construction]:
    """The backends' classes that can serve a stored config, the one home of that rule: the
    classes a config built by ``function`` for class ``cls`` of ``home`` can reach
    (those ``cls`` selects for the config it stores as ``attr``,
    :func:`selected_classes`, else those of the construction's module,
    :func:`construction_classes`) and the fields its default construction fills
    (:func:`default_fields`), with the classes in the order the selector's module
    (else the construction's) tries their backends (:func:`backend_order`); when
    the class binds its experts class itself for the config its ``method`` stores, those
    classes in its order instead (:func:`.bound_classes.bound_classes`); either way less those
    the selector's own compatibility test rejects for ``cls``'s config
    (:func:`.rejected.rejected_classes`), those whose backends the storing ``method``'s
    conversion call cannot load on (:func:`.preconditions.failing_backends`) and those that
    do not take the key ``cls`` asks its selector for when others do
    (:func:`.quant_keys.keyed_out`)."""
    default = default_fields(index, function, home)
    bindings = bound_selectors(index, home, cls)  # read once, handed to the rules below
    selectors = [b.module for b in bindings]  # the selector modules' texts, in its order
    failing = failing_backends(index, home, cls, method)

    def served(classes: Iterable[str]) -> tuple[str, ...]:
        """``classes`` less those the selectors' own tests reject for ``cls``'s config,
        those whose backends the storing method's conversion call cannot load on, and those
        that do not take the key ``cls`` asks its selector for while others do."""
        found = tuple(classes)
        out = frozenset(found).difference(*(rejected_classes(index, m, home, cls,
                                                             frozenset(found))
                                             for m in selectors))
        if failing:
            out = frozenset(c for c in out if not any(
                (owned := class_backends(index, m, c)) and owned <= failing for m in selectors))
        out -= keyed_out(index, home, cls, bindings, out)
        return tuple(c for c in found if c in out)

    bound = bound_classes(index, home, cls, bindings, method)
    if bound is not None:  # the class's own binding serves it, not the selector's order
        bound = served(bound)
        return frozenset(bound), default._replace(order=bound, bound=True)
    modules = selectors + [_construction_module(index, function, home)]
    order = next((o for o in (backend_order(index, m) for m in modules if m) if o), ())
    selected = selected_classes(index, home, cls, bindings, attr)
    if selected:  # none left: no class serves it (the consumer is not resolved)
        return frozenset(served(sorted(selected))), default._replace(order=served(order))
    return construction_classes(index, function, home), default._replace(order=order)


def _construction_module(index: ReaderIndex, function: str, home: str) -> str:
    """The text of the module defining the free function ``function`` (``home`` when it
    does, or when ``function`` is empty)."""
    if not function or re.search(rf"^def[ \t]+{re.escape(function)}\(", home, re.M):
        return home
    return defining_module(index, function, home)


def construction_classes(index: ReaderIndex, function: str, home: str) -> frozenset[str]:
    """The classes the module that builds the config defines or imports (at any depth: a
    backend selector imports its kernel classes inside its branches): the only consumers the
    config can reach. That module defines the free function ``function`` the builder builds
    the config with (the module the builder's file ``home`` imports it from); without one (a
    constructor, a method), it is ``home`` itself. Empty when that module is not scanned (the
    consumer cannot be tied to the construction: the accessor is kept)."""
    module = _construction_module(index, function, home)
    if module is home:
        return module_classes(index, home)
    return module_classes(index, module)
