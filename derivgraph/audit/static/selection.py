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
"""

from __future__ import annotations

import ast
import re
from collections.abc import Callable, Sequence
from typing import NamedTuple, Protocol, TypeVar

from derivgraph.audit.static.def_text import def_text

_T = TypeVar("_T")


class ReaderIndex(Protocol):
    """What selection reads of :class:`.readers.ReaderIndex` (which imports this module): the
    scanned files' (shown path, text) and its per-index memo."""

    files: Sequence[tuple[str, str]]

    def memo(self, key: str, make: Callable[[], _T]) -> _T: ...

__all__ = [
    "NO_CONSTRUCTION",
    "Construction",
    "backend_classes",
    "backend_order",
    "bound_selectors",
    "class_backends",
    "class_body",
    "class_node",
    "default_fields",
    "defining_module",
    "module_classes",
    "parsed",
    "selected_classes",
    "selector_modules",
]

_IMPORTED = re.compile(r"\bimport[ \t]*(?:\(([^)]*)\)|([\w, \t]+))")
_CLASS_NAME = re.compile(r"\b([A-Z]\w*)\b")
_BINDS = re.compile(r"^[ \t]+(?:[\w.]+[ \t]*,[ \t]*)*self\.(\w+)(?:[ \t]*,[ \t]*[\w.]+)*[ \t]*"
                    r"=[ \t]*([a-z_]\w*)\(", re.M)
"""``self.a, self.b = func(`` (or ``self.b = func(``): attribute ``b`` bound from ``func``."""
_KEYWORD_NAME = re.compile(r"(?<![=!<>\w.])([a-z_]\w*)[ \t]*=(?!=)")


def defining_module(index: ReaderIndex, function: str, home: str) -> str:
    """The text of the scanned module ``home`` imports ``function`` from (``from a.b import
    function``, also inside a function or a bracketed list), or "" (not found, not scanned)."""
    imports = index.memo(f"imports {hash(home)}", lambda: [
        (m.group(1), m.group(2)) for m in re.finditer(
            r"\bfrom[ \t]+([\w.]+)[ \t]+import[ \t]*(\([^)]*\)|[^\n]*)", home)])
    for module, names in imports:
        if re.search(rf"\b{re.escape(function)}\b", names):
            return module_text(index, "/" + module.replace(".", "/") + ".py")
    return ""


def module_text(index: ReaderIndex, tail: str) -> str:
    """The text of the scanned file whose path ends with ``tail`` ("" when none)."""
    return index.memo(f"module {tail}", lambda: next(
        (t for shown, t in index.files if f"/{shown}".endswith(tail)), ""))


def module_classes(text: str) -> frozenset[str]:
    """The class names a module's text defines or imports (its kernels' candidates)."""
    names = {n for m in _IMPORTED.finditer(text) for n in _CLASS_NAME.findall(m.group(1)
                                                                             or m.group(2))}
    names.update(re.findall(r"^class[ \t]+(\w+)", text, re.M))
    return frozenset(names)


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


def selected_classes(index: ReaderIndex, home: str, cls: str | None,
                     attr: str = "") -> frozenset[str]:
    """The experts classes class ``cls`` of the storing file ``home`` selects (module
    docstring): a class named directly beside the stored config ``self.<attr>`` in a call it
    hands the config to (``make_kernel(quant_config=self.<attr>, experts_cls=MarlinExperts)``);
    else the classes defined or imported by the module of each free function it binds an
    attribute from that is annotated to return classes, and the class names it binds that
    attribute to directly. Empty when it binds none."""
    if not cls:
        return frozenset()

    def select() -> frozenset[str]:
        body = class_body(home, cls)
        if not body:
            return frozenset()
        named = _named_beside(body, attr) if attr else frozenset()
        if named:  # only the names the storing module defines or imports are classes
            named &= index.memo(f"module classes {hash(home)}", lambda: module_classes(home))
        if named:
            return named
        bound: set[str] = set()
        names: set[str] = set()
        for held, module, _ in bound_selectors(index, home, body):
            bound.add(held)
            names |= index.memo(f"module classes {hash(module)}",
                                lambda text=module: module_classes(text))
        for held in bound:
            names.update(re.findall(rf"^[ \t]+self\.{held}[ \t]*=[ \t]*([A-Z]\w*)[ \t]*$", body,
                                    re.M))
        return frozenset(names)

    return index.memo(f"selected {hash(home)} {cls} {attr}", select)


def parsed(index: ReaderIndex, text: str) -> ast.Module | None:
    """The syntax tree of a scanned module's ``text`` (memoized), None when it does not parse:
    the one way the selection rules read a module or class body with :mod:`ast`."""
    def parse() -> ast.Module | None:
        try:
            return ast.parse(text)
        except SyntaxError:
            return None

    return index.memo(f"parsed {hash(text)}", parse)


def class_node(index: ReaderIndex, home: str, cls: str) -> ast.ClassDef | None:
    """The top-level class ``cls`` of module ``home`` as parsed (None when not there)."""
    tree = parsed(index, home)
    return next((n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == cls),
                None) if tree is not None else None


def class_body(home: str, cls: str) -> str:
    """The text of class ``cls`` in ``home`` ("" when not there)."""
    head = re.search(rf"^class[ \t]+{re.escape(cls)}\b", home, re.M)
    if head is None:
        return ""
    end = re.compile(r"^(?:class|def|@)", re.M).search(home, head.end())
    return home[head.start():end.start() if end else len(home)]


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


def selector_modules(index: ReaderIndex, home: str, cls: str | None) -> list[str]:
    """The texts of the selector modules class ``cls`` of ``home`` binds an attribute from
    (:func:`selected_classes`), in the class's order; empty when it binds none."""
    body = class_body(home, cls) if cls else ""
    return [module for _, module, _ in bound_selectors(index, home, body)] if body else []


_BACKEND_TEST = re.compile(r"\bbackend[ \t]*(?:==|is(?![ \t]+not)|in)[ \t]*(\(?)[ \t]*")
"""A branch on the backend (``if backend == Enum.MARLIN:``, ``elif backend in (Enum.A,
Enum.B):``): the classes named until the next such branch are those backends'."""
_OTHER_PLATFORM = re.compile(r"^[ \t]*(?:el)?if\b[^\n]*\bis_(?:cpu|xpu|rocm|tpu)\(\)[^\n]*:[ \t]*$")
"""A test for a platform without CUDA graphs of the kind the audit is about (its own list)."""
_TOP_LEVEL = re.compile(r"^(?:def|class|async[ \t]+def)\b", re.M)
_MEMBER = re.compile(r"\b([A-Z]\w*)\.([A-Z][A-Z0-9_]*)\b")


def _close(text: str, start: int) -> int:
    """Just past the bracket that closes the one opened before ``start``."""
    end, depth = start, 1
    while end < len(text) and depth:
        depth += {"(": 1, "[": 1, ")": -1, "]": -1}.get(text[end], 0)
        end += 1
    return end


def backend_order(index: ReaderIndex, module: str) -> tuple[str, ...]:
    """The experts classes a selector ``module`` maps its backends to (``if backend ==
    Enum.MARLIN: return [MarlinExperts]``; a class belongs to the first branch naming it, and
    within one branch the last mention orders them: the list it returns), in the order of the
    first list or tuple of that enum's members the module states outside a branch test
    (``[Enum.RDNA3, Enum.MARLIN, ...]``: its priority order, the backend tried first first),
    skipping a list returned under a CPU, XPU or ROCm test (``if current_platform.is_cpu():
    return [...]``). Empty when the module states none."""
    def order() -> tuple[str, ...]:
        found = _owners(index, module)
        if found is None:
            return ()
        enum, owner, tested = found
        for members in _member_lists(module, enum, tested):
            ranked = sorted((c for c in owner if owner[c][0] & set(members)),
                            key=lambda c: (min(members.index(b) for b in owner[c][0]
                                               if b in members), owner[c][1]))
            if ranked:
                return tuple(ranked)
        return ()

    return index.memo(f"backend order {hash(module)}", order)


_Owners = tuple[str, dict[str, tuple[frozenset[str], int]], set[tuple[int, int]]]


def _owners(index: ReaderIndex, module: str) -> _Owners | None:
    """The backend enum a selector ``module`` branches on, each class's backends (the first
    branch naming it) and last mention there, and the (start, end) of each branch test; None
    when it has no backend branch (memoized)."""
    def find() -> _Owners | None:
        tests = []  # (start, end of the test, enum members tested)
        for t in _BACKEND_TEST.finditer(module):
            end = _close(module, t.end()) if t.group(1) else module.find(":", t.end())
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
            mentions = {n.group(1): n.start() for n in _CLASS_NAME.finditer(module, start, end)
                        if n.group(1) in known}
            for name, at in mentions.items():
                owner.setdefault(name, (backends, at))
        tested = {(s, e) for s, e, _ in tests}
        return enum, owner, tested

    return index.memo(f"backend owners {hash(module)}", find)


def backend_classes(index: ReaderIndex, module: str, member: str) -> tuple[str, ...]:
    """The classes selector ``module`` maps its backend ``member`` to (``if backend ==
    Enum.AITER: return [AiterExperts]``), in the order it lists them; empty when none."""
    found = _owners(index, module)
    if found is None:
        return ()
    _, owner, _ = found
    return tuple(sorted((c for c in owner if member in owner[c][0]), key=lambda c: owner[c][1]))


def class_backends(index: ReaderIndex, module: str, cls: str) -> frozenset[str]:
    """The backend members selector ``module`` maps class ``cls`` to (the first branch naming
    it, :func:`backend_classes`); empty when none."""
    found = _owners(index, module)
    return found[1][cls][0] if found is not None and cls in found[1] else frozenset()


def _member_lists(module: str, enum: str, tested: set[tuple[int, int]]) -> list[list[str]]:
    """The members of each bracketed list or tuple that holds only ``enum`` members (two or
    more; comments allowed), in text order, less those of a branch test (``tested``: (start,
    end) of each) and those under a platform test (:data:`_OTHER_PLATFORM`)."""
    out = []
    for m in re.finditer(rf"[\[(](?=\s*(?:#[^\n]*\s*)*{re.escape(enum)}\.)", module):
        end = _close(module, m.end())
        if any(s <= m.start() < e for s, e in tested):
            continue
        inner = re.sub(r"#[^\n]*", "", module[m.end():end - 1])
        members = re.findall(rf"\b{re.escape(enum)}\.([A-Z]\w*)", inner)
        if len(members) < 2 or re.sub(rf"\b{re.escape(enum)}\.[A-Z]\w*|[\s,]", "", inner):
            continue
        line = module.rfind("\n", 0, m.start())
        prev = module.rfind("\n", 0, max(line, 0))
        if _OTHER_PLATFORM.match(module[prev + 1:line]):
            continue
        out.append(members)
    return out


def _named_beside(body: str, attr: str) -> frozenset[str]:
    """The capitalized names passed as keyword values (``experts_cls=MarlinExperts``) in the
    calls of ``body`` that take ``self.<attr>`` as a keyword argument (the caller keeps those
    its module defines or imports)."""
    out: set[str] = set()
    for m in re.finditer(rf"\w[ \t]*=[ \t]*self\.{re.escape(attr)}[ \t]*(?=[,)\n])", body):
        start, depth = m.start(), 0
        while start > 0 and depth >= 0:
            start -= 1
            depth += {")": 1, "(": -1}.get(body[start], 0)
        if start <= 0:
            continue
        end, depth = start + 1, 0
        while end < len(body) and depth >= 0:
            depth += {"(": 1, ")": -1}.get(body[end], 0)
            end += 1
        out.update(re.findall(r"(?<![=!<>])=[ \t]*([A-Z]\w*)[ \t]*(?=[,\n]|$)",
                              _top_level(body[start + 1:end - 1]), re.M))
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
    fall-through ``return`` fills (``return make_config(g1_alphas=..., a1_gscale=...)`` at the
    function body's own indent after its ``if backend == ...: return ...`` branches, or in its
    final ``else:``) and those only its other ``return`` calls fill, looked up in the module
    ``home`` imports it from (or ``home``); empty when there is no fall-through return."""
    if not function:
        return Construction()

    def fields() -> Construction:
        module = defining_module(index, function, home) or home
        body = def_text(module, function, "")
        first = re.search(r":[ \t]*\n(?:[ \t]*(?:#[^\n]*)?\n)*([ \t]+)\S", body)
        if first is None:
            return Construction()
        indent = first.group(1)
        params = _parameters(body)
        calls = [(m.start(), m.group(1), _call_keywords(body, m.end(), params))
                 for m in re.finditer(r"^([ \t]+)return[ \t]+[\w.]+\(", body, re.M)]
        last = [c for c in calls if c[1] == indent]
        if not last:  # ``else: return ...`` as the function's last statement
            tail = re.search(rf"^{indent}else[ \t]*:[ \t]*\n", body, re.M)
            last = [c for c in calls if tail and c[0] > tail.start() and c[1] != indent
                    and not re.search(rf"^{indent}\S", body[tail.end():], re.M)]
        if not last:
            return Construction()
        filled = last[-1][2]
        others = frozenset().union(*(c[2] for c in calls if c is not last[-1]))
        return Construction(filled, others - filled)

    return index.memo(f"default fields {function} {hash(home)}", fields)


def _call_keywords(body: str, start: int,
                   parameters: frozenset[str] = frozenset()) -> frozenset[str]:
    """The keyword names of the call whose argument list starts at ``start``; when they are
    all private descriptors (``_w1=QuantDesc(dtype, shape, w1_scale, ...)``), the building
    function's ``parameters`` they are made of instead (its callers fill the config through
    those names: ``w1_scale=layer.w13_scales``)."""
    end, depth = start, 1
    while end < len(body) and depth:
        depth += {"(": 1, ")": -1}.get(body[end], 0)
        end += 1
    names = frozenset(_KEYWORD_NAME.findall(_top_level(body[start:end - 1])))
    if names and all(n.startswith("_") for n in names):
        return frozenset(p for p in parameters
                         if re.search(rf"(?<![\w.]){p}\b", body[start:end - 1]))
    return names


def _parameters(function: str) -> frozenset[str]:
    """The parameter names of a ``def`` text (its header's top-level names)."""
    open_at = function.find("(")
    if open_at < 0:
        return frozenset()
    header = function[open_at + 1:_close(function, open_at + 1) - 1]
    return frozenset(re.findall(r"(?:^|,)[ \t\n]*\**(\w+)", _top_level(header)))


def _top_level(call: str) -> str:
    """``call`` with every bracketed part blanked (only its own keywords stay visible)."""
    out, depth = [], 0
    for c in call:
        if c in "([{":
            depth += 1
        elif c in ")]}":
            depth -= 1
            continue
        out.append(c if depth == 0 else " ")
    return "".join(out)
