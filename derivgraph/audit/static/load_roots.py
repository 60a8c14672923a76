"""The weight-derivation filter of model-loading roots.

A method that loads a model an object holds (``load_model``, ``load_draft_model``:
:data:`.scope.MODEL_LOAD_ROOTS`) runs once, when that model loads; no reload reruns it. What
it stores is therefore never *moved* by a reload: it goes stale only when it is computed from
the loaded module's tensors (a drafter parameter, the target's KV scales), which a weight
update refills in place while this derived copy keeps the first values. Scratch
(``torch.empty/zeros/arange`` alone), ints, references and per-step metadata it allocates hold
no weight values.

A buffer allocated elsewhere (``self.x = torch.empty(n)`` at construction) and filled by the
model-loading step (``self.x.copy_(self.model.fc(self.model.mask))``) is such a copy too; it
is reported at its allocation (:func:`allocation_line`). So is a local the step fills with
``copy_`` and then stores (``pinned.copy_(param.data)``; ``self.x = pinned``:
:func:`filled_local_source`).

:func:`derives_from_module` names the tensor of the first kind: the value, through the locals
it reads, is

* arithmetic with a tensor read from an object (``torch.arange(n) + model.d2t``),
* a copy of one (``getattr(target, name).detach().clone()``, ``attn._k_scale.to(dtype)``), or
* a method call on a submodule handed such a tensor (``self.model.fc(self.model.mask)``).
"""

from __future__ import annotations

import ast
import re
from collections.abc import Mapping, Sequence

from derivgraph.audit.static.ast import is_getattr
from derivgraph.audit.static.infer import attr_chain
from derivgraph.audit.static.values import COPY_METHODS, is_allocation, shape_free_chains
from derivgraph.audit.static.vocab import NON_TENSOR_ATTRS, NON_TENSOR_METHODS
from derivgraph.audit.static.walk import walk

__all__ = ["allocation_line", "copied_from_module", "derives_from_module", "filled_local_source",
           "local_definitions"]

def derives_from_module(value: ast.expr, history: Mapping[str, Sequence[ast.expr]],
                        imports: Mapping[str, str]) -> str | None:
    """The object's tensor ``value`` computes from (module docstring: ``model.d2t``,
    ``getattr(target_attn, name)``), or None; ``history`` maps each local to the expressions
    assigned to it."""
    if is_allocation(value):
        return None
    for node in _expanded(value, history):
        for n in walk(node):
            found = _derives(n, history, imports)
            if found:
                return found
    return None


def copied_from_module(value: ast.expr, history: Mapping[str, Sequence[ast.expr]],
                       imports: Mapping[str, str]) -> str | None:
    """The object's tensor a ``copy_`` of ``value`` copies: what :func:`derives_from_module`
    names, or the tensor ``value`` reads itself (``buf.copy_(param.data)``: the ``copy_`` is
    the copy)."""
    return derives_from_module(value, history, imports) or _object_tensor(value, history,
                                                                          imports)


def filled_local_source(value: ast.expr, func: ast.AST,
                        history: Mapping[str, Sequence[ast.expr]],
                        imports: Mapping[str, str]) -> str | None:
    """For a local ``value`` the function fills with ``copy_`` (``pinned = torch.empty(...)``;
    ``pinned.copy_(param.data)``), the object's tensor it copies (:func:`copied_from_module`);
    else None."""
    if not isinstance(value, ast.Name):
        return None
    for n in walk(func):
        if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) \
                and n.func.attr == "copy_" and n.args and isinstance(n.func.value, ast.Name) \
                and n.func.value.id == value.id:
            found = copied_from_module(n.args[0], history, imports)
            if found:
                return found
    return None


def local_definitions(func: ast.AST) -> dict[str, list[ast.expr]]:
    """Every value assigned to each plain local of ``func`` (``d2t = model.d2t``), whatever
    its type: the filter follows locals the tensor inference does not know."""
    out: dict[str, list[ast.expr]] = {}
    for node in walk(func):
        if isinstance(node, ast.Assign) and len(node.targets) == 1 \
                and isinstance(node.targets[0], ast.Name):
            out.setdefault(node.targets[0].id, []).append(node.value)
        elif isinstance(node, ast.AnnAssign) and node.value is not None \
                and isinstance(node.target, ast.Name):
            out.setdefault(node.target.id, []).append(node.value)
    return out


def _expanded(value: ast.expr, history: Mapping[str, Sequence[ast.expr]]) -> list[ast.expr]:
    """``value`` and the definitions of the locals it reads, transitively."""
    nodes, seen = [value], set()
    for node in nodes:
        for n in walk(node):
            if isinstance(n, ast.Name) and n.id not in seen and n.id in history:
                seen.add(n.id)
                nodes += [d for d in history[n.id] if not is_allocation(d)]
    return nodes


def _object_tensor(node: ast.expr, history: Mapping[str, Sequence[ast.expr]],
                   imports: Mapping[str, str], seen: frozenset[str] = frozenset()) -> str | None:
    """The tensor attribute of an object ``node`` reads (through its locals and method calls
    on it: ``scale.detach()``): a dotted chain read as a tensor, not only for its shape, or
    ``getattr(obj, name)``; else None. An allocation reads none."""
    if is_allocation(node):
        return None
    if isinstance(node, ast.Call) and is_getattr(node):
        return ast.unparse(node)
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) \
            and node.func.attr not in NON_TENSOR_METHODS:
        found = _object_tensor(node.func.value, history, imports, seen)
        if found:
            return found
    for chain in sorted(shape_free_chains(node), key=lambda c: (-c.count("."), c)):
        head, _, rest = chain.partition(".")
        if not rest and head in history and head not in seen:
            found = next((f for d in history[head] if (f := _object_tensor(
                d, history, imports, seen | {head}))), None)
            if found:
                return found
        elif rest and head not in imports and chain.rsplit(".", 1)[1] not in NON_TENSOR_ATTRS \
                and not _is_method(node, chain):
            return chain
    return None


def _is_method(node: ast.expr, chain: str) -> bool:
    """Whether ``chain`` is called in ``node`` (``model.fc`` in ``model.fc(x)``): a method,
    not a tensor."""
    return any(isinstance(n, ast.Call) and attr_chain(n.func) == chain for n in walk(node))


def _derives(n: ast.AST, history: Mapping[str, Sequence[ast.expr]],
             imports: Mapping[str, str]) -> str | None:
    if isinstance(n, ast.BinOp):
        return _object_tensor(n.left, history, imports) or _object_tensor(n.right, history,
                                                                          imports)
    if not (isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute)):
        return None
    if n.func.attr in COPY_METHODS:
        return _object_tensor(n.func.value, history, imports)
    receiver = attr_chain(n.func.value) or ""
    if receiver.split(".")[0] in imports or "." not in receiver:
        return None  # torch.f(...), or a method of a local or of self itself
    for arg in [*n.args, *(k.value for k in n.keywords)]:
        found = _object_tensor(arg, history, imports)
        if found:
            return found
    return None


def allocation_line(text: str, attr: str) -> int | None:
    """The 1-based line of the first ``self.<attr> = torch.<allocation>(`` in a file's source
    (the buffer a model-loading step fills), or None."""
    m = re.search(rf"^[ \t]*self\.{re.escape(attr)}[ \t]*(?::[^=\n]*)?=[ \t]*"
                  rf"torch\.(?:empty|zeros|ones|full)\w*\(", text, re.M)
    return text.count("\n", 0, m.start()) + 1 if m else None
