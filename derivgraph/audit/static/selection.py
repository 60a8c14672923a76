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
(:meth:`.readers.ReaderIndex.coverage`).
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from derivgraph.audit.static.def_text import def_text

if TYPE_CHECKING:
    from derivgraph.audit.static.readers import ReaderIndex

__all__ = ["default_fields", "defining_module", "module_classes", "selected_classes"]

_IMPORTED = re.compile(r"\bimport[ \t]*(?:\(([^)]*)\)|([\w, \t]+))")
_CLASS_NAME = re.compile(r"\b([A-Z]\w*)\b")
_BINDS = re.compile(r"^[ \t]+(?:[\w.]+[ \t]*,[ \t]*)*self\.(\w+)(?:[ \t]*,[ \t]*[\w.]+)*[ \t]*"
                    r"=[ \t]*([a-z_]\w*)\(", re.M)
"""``self.a, self.b = func(`` (or ``self.b = func(``): attribute ``b`` bound from ``func``."""
_KEYWORD_NAME = re.compile(r"(?<![=!<>\w.])([a-z_]\w*)[ \t]*=(?!=)")


def defining_module(index: ReaderIndex, function: str, home: str) -> str:
    """The text of the scanned module ``home`` imports ``function`` from (``from a.b import
    function``, also inside a function or a bracketed list), or "" (not found, not scanned)."""
    for m in re.finditer(r"\bfrom[ \t]+([\w.]+)[ \t]+import[ \t]*(\([^)]*\)|[^\n]*)", home):
        if re.search(rf"\b{re.escape(function)}\b", m.group(2)):
            return module_text(index, "/" + m.group(1).replace(".", "/") + ".py")
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


def selected_classes(index: ReaderIndex, home: str, cls: str | None) -> frozenset[str]:
    """The experts classes class ``cls`` of the storing file ``home`` selects (module
    docstring): the classes defined or imported by the module of each free function it binds
    an attribute from that is annotated to return classes, and the class names it binds that
    attribute to directly. Empty when it binds none."""
    if not cls:
        return frozenset()

    def select() -> frozenset[str]:
        head = re.search(rf"^class[ \t]+{re.escape(cls)}\b", home, re.M)
        if head is None:
            return frozenset()
        end = re.compile(r"^(?:class|def|@)", re.M).search(home, head.end())
        body = home[head.start():end.start() if end else len(home)]
        attrs: set[str] = set()
        names: set[str] = set()
        for m in _BINDS.finditer(body):
            module = defining_module(index, m.group(2), home)
            if module and _returns_classes(module, m.group(2)):
                attrs.add(m.group(1))
                names |= index.memo(f"module classes {hash(module)}",
                                    lambda text=module: module_classes(text))
        for attr in attrs:
            names.update(re.findall(rf"^[ \t]+self\.{attr}[ \t]*=[ \t]*([A-Z]\w*)[ \t]*$", body,
                                    re.M))
        return frozenset(names)

    return index.memo(f"selected {hash(home)} {cls}", select)


def default_fields(index: ReaderIndex, function: str, home: str) -> frozenset[str]:
    """The fields the fall-through ``return`` of the building function ``function`` fills
    (``return make_config(g1_alphas=..., a1_gscale=...)`` at the function body's own indent,
    after its ``if backend == ...: return ...`` branches), looked up in the module ``home``
    imports it from (or ``home``); empty when there is none."""
    if not function:
        return frozenset()

    def fields() -> frozenset[str]:
        module = defining_module(index, function, home) or home
        body = def_text(module, function, "")
        first = re.search(r":[ \t]*\n(?:[ \t]*(?:#[^\n]*)?\n)*([ \t]+)\S", body)
        if first is None:
            return frozenset()
        indent = first.group(1)
        last = None
        for m in re.finditer(rf"^{indent}return[ \t]+[\w.]+\(", body, re.M):
            last = m
        if last is None:
            return frozenset()
        end, depth = last.end(), 1
        while end < len(body) and depth:
            depth += {"(": 1, ")": -1}.get(body[end], 0)
            end += 1
        call = body[last.end():end - 1]
        return frozenset(_KEYWORD_NAME.findall(_top_level(call)))

    return index.memo(f"default fields {function} {hash(home)}", fields)


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
