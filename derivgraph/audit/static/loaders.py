"""Weight loaders that bind a new Parameter on every load: a loader-site class.

A weight loader (``load_weights``, ``weight_loader``...) normally copies each checkpoint tensor
into the Parameter the layer already holds, so the object a captured graph reads keeps its
storage. A loader that instead binds a *new* Parameter or buffer object
(``self.score.bias = nn.Parameter(w)``, ``register_parameter(name, Parameter(w))``) or rebinds
``.data`` replaces that object on every reload: vLLM 0.33's layerwise copy-back keeps only the
objects it recorded for the layer, and a kernel-format reload runs no loader at all, so the
graph keeps reading the old storage whenever the new object lands after the copy-back.

:func:`is_loader_function` names the loader functions and :func:`loader_rebind` tells a site
that binds a new object in one; :func:`refilled_in_place` names the loader stores that still
leave one kept object: a Parameter registered once under a flag the same block sets
(``if not layer.is_fallback: layer.is_fallback = True; layer.weight = Parameter(empty)``),
then filled in place, and a ``.data`` rebind to a conversion of the same storage
(``p.data = p.data.to(dtype)``: a reload finds it converted and copies into it).
:func:`pooler_only` names the submodule stores no captured path reads: the class hands the
submodule only to its pooler (``_init_pooler``: ``Pooler(classifier=self.score)``), which runs
after the captured forward and looks the rebound Parameter up on each call.
"""

from __future__ import annotations

import re

from derivgraph.audit.static.sites import CategoryId

__all__ = ["is_loader_function", "is_loader_name", "loader_rebind", "pooler_only",
           "refilled_in_place"]

_LOADER = re.compile(r"^(?:_?load_weights?|weight_loader\w*|\w*_weight_loader|load_\w*weights)$")
_NEW_OBJECT = re.compile(r"^(?:[\w.]*\.)?\w*(?:Parameter|Buffer)\(")
_CATEGORIES = frozenset({CategoryId.TENSOR_ATTR, CategoryId.REGISTER, CategoryId.DATA_REBIND})


def is_loader_name(name: str) -> bool:
    """Whether a function's own name is a weight loader's (``load_weights``,
    ``weight_loader``, ``_moe_weight_loader``, ``load_expert_weights``...)."""
    return _LOADER.match(name) is not None


def is_loader_function(qualname: str) -> bool:
    """Whether any segment of a function's qualified name is a weight loader's name."""
    return any(is_loader_name(part) for part in qualname.split("."))


def loader_rebind(function: str, category: CategoryId, expr: str, allocation: bool,
                  empty: bool) -> bool:
    """Whether a site binds a new Parameter/buffer object (or rebinds ``.data``) inside a
    weight loader, with values of the checkpoint (not a fresh allocation or placeholder)."""
    if category not in _CATEGORIES or allocation or empty or not is_loader_function(function):
        return False
    return category is CategoryId.DATA_REBIND or bool(_NEW_OBJECT.match(expr.strip()))


def refilled_in_place(attr: str, expr: str, body: str, line_text: str) -> str | None:
    """Why a loader store still leaves one kept object the loader fills in place, or None.

    ``body`` is the storing function's text and ``line_text`` the store's line."""
    if re.match(rf"^(?:[\w.]*\.)?{re.escape(attr)}\.data\.to\(", expr.strip()):
        return "converts the parameter's own storage: a reload finds it converted and the " \
               "loader copies into it"
    lines = body.splitlines()
    at = next((i for i, text in enumerate(lines) if text.strip() == line_text.strip()), None)
    if at is None:
        return None
    indent = len(lines[at]) - len(lines[at].lstrip())
    for i in range(at - 1, -1, -1):
        text = lines[i]
        own = len(text) - len(text.lstrip())
        if not text.strip() or own >= indent:
            continue
        indent = own
        m = re.match(r"[ \t]*if[ \t]+not[ \t]+([\w.]+)\.(\w+)[ \t]*:", text)
        if m and re.search(rf"^[ \t]+{re.escape(m.group(1))}\.{m.group(2)}[ \t]*=[ \t]*True\b",
                           "\n".join(lines[i + 1:at]), re.M):
            return f"registered once (under `{m.group(1)}.{m.group(2)}`), then filled in place " \
                   "by the loader"
    return None


def pooler_only(owner: str, class_text: str) -> str | None:
    """The pooler method (``_init_pooler``) when every method of ``class_text`` (a class's
    source) that reads the submodule ``owner`` (``self.score``), other than weight loaders, is
    a pooler method; None when another method (``forward``) reads it, or none does."""
    if not re.fullmatch(r"self\.\w+", owner) or not class_text:
        return None
    heads = list(re.finditer(r"^([ \t]+)def[ \t]+(\w+)", class_text, re.M))
    if not heads:
        return None
    indent = min(len(h.group(1)) for h in heads)
    methods = [h for h in heads if len(h.group(1)) == indent]
    read = re.compile(rf"{re.escape(owner)}\b(?![ \t]*=[^=])")
    poolers = []
    for i, head in enumerate(methods):
        end = methods[i + 1].start() if i + 1 < len(methods) else len(class_text)
        name = head.group(2)
        if is_loader_function(name) or not read.search(class_text, head.end(), end):
            continue
        if "pooler" not in name.lower():
            return None
        poolers.append(name)
    return poolers[0] if poolers else None
