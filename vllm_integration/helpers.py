"""Refill helpers for hand-written post-load code (the imperative form of a derivgraph spec).

* :func:`refill_derived` — keep a derived tensor's storage: copy into it when the layout
  matches, else replace it. Buffers and plain attributes; never makes a Parameter.
* :func:`keep_constants` — experts objects (rebuilt by every post-load step) name their
  constants in ``kept_constants``; keep them on the layer and hand them back to the new object.
* :func:`replace_parameter` — vLLM's ``replace_parameter`` that refills the kept Parameter in
  place and returns it.
"""

from __future__ import annotations

import logging
from typing import Any

import torch
from torch import nn

__all__ = ["keep_constants", "refill_derived", "replace_parameter"]

logger = logging.getLogger(__name__)

_WRAPPED_EXPERTS = ("experts", "fallback_experts")  # FallbackExperts: Triton-or-CUTLASS, ...


def _held(obj: Any, name: str) -> Any:
    if isinstance(obj, nn.Module):
        if name in obj._parameters:
            return obj._parameters[name]
        if name in obj._buffers:
            return obj._buffers[name]
    return getattr(obj, name, None)


def _same_layout(a: torch.Tensor, b: torch.Tensor) -> bool:
    return a.shape == b.shape and a.dtype == b.dtype and a.device == b.device


def _bind(obj: Any, name: str, tensor: torch.Tensor | None) -> None:
    if isinstance(obj, nn.Module) and name in obj._buffers:
        obj._buffers[name] = tensor  # keeps persistence
    else:
        try:
            setattr(obj, name, tensor)
        except AttributeError:  # frozen dataclasses (quant-config descriptors), __slots__
            object.__setattr__(obj, name, tensor)


def refill_derived(obj: Any, name: str, tensor: torch.Tensor | None) -> torch.Tensor | None:
    """Keep ``obj.name``'s storage: copy ``tensor`` into it if shape, dtype and device match.

    Otherwise (nothing held, or another layout) ``tensor`` replaces it. Works for registered
    buffers (persistence kept), plain attributes, and attributes of frozen dataclasses. A held
    Parameter is kept (copied into, or its ``.data`` rebound); ``tensor`` is never wrapped into
    a new Parameter. Returns the tensor ``obj.name`` holds afterwards — store that one in every
    other holder.
    """
    if tensor is None:
        _bind(obj, name, None)
        return None
    held = _held(obj, name)
    if tensor is held:
        return held
    if isinstance(tensor, nn.Parameter):
        tensor = tensor.data
    if isinstance(held, torch.Tensor) and held.device.type != "meta" and _same_layout(held,
                                                                                     tensor):
        with torch.no_grad():
            held.copy_(tensor)
        return held
    if isinstance(held, nn.Parameter):  # keep the object, take the new layout
        held.data = tensor
        return held
    _bind(obj, name, tensor)
    return tensor


def _experts_tree(experts: Any, prefix: str = "") -> list[tuple[str, Any]]:
    out = [(prefix, experts)]
    for attr in _WRAPPED_EXPERTS:
        inner = getattr(experts, attr, None)
        if inner is not None and inner is not experts:
            out += _experts_tree(inner, f"{prefix}{attr}_")
    return out


def keep_constants(layer: nn.Module, experts: Any = None) -> int:
    """Keep ``experts``' constants on ``layer`` across rebuilds; returns how many were kept.

    ``experts`` defaults to ``layer.quant_method.moe_kernel.fused_experts``. For every name in
    its ``kept_constants`` (and, recursively, in wrapped ``experts`` / ``fallback_experts``),
    the constant is refilled into ``layer._kept_<path>_<name>`` (allocated on the first call)
    and that tensor is handed back to the experts object. Tensors that are the same object
    (``c_strides2 is ab_strides1``) stay the same object.
    """
    if experts is None:
        kernel = getattr(getattr(layer, "quant_method", None), "moe_kernel", None)
        experts = getattr(kernel, "fused_experts", None)
    if experts is None:
        return 0
    kept = 0
    for prefix, obj in _experts_tree(experts):
        same: dict[int, torch.Tensor] = {}
        for name in getattr(obj, "kept_constants", ()):
            value = getattr(obj, name, None)
            if not isinstance(value, torch.Tensor):
                continue
            if id(value) in same:  # an alias of a constant kept above
                object.__setattr__(obj, name, same[id(value)])
                continue
            held = refill_derived(layer, f"_kept_{prefix}{name}", value)
            same[id(value)] = held
            object.__setattr__(obj, name, held)
            kept += 1
    return kept


def replace_parameter(layer: nn.Module, name: str,
                      tensor: torch.Tensor | None) -> nn.Parameter | None:
    """vLLM's ``replace_parameter``, refilling the kept Parameter in place; returns it.

    * Same shape, stride, dtype and device: ``copy_`` (``data_ptr`` kept).
    * ``tensor`` already lives in the kept storage (``weight.t()``): re-view it, no copy.
    * Another dense layout of the same byte size, dtype and device (a transpose, a reshape):
      re-view the kept storage with the new layout and copy (``data_ptr`` kept).
    * Otherwise ``.data`` is rebound (the object is kept; its address changes — logged).

    A new Parameter is registered only when none is held, the held one is on meta while
    ``tensor`` is real, or it is an online requantization source, as in vLLM. Custom attributes
    of ``tensor`` (``is_shuffled``...) carry over, except ``weight_loader``, which stays the
    kept one's. ``tensor=None`` sets the attribute to None.
    """
    if tensor is None:
        setattr(layer, name, None)
        return None
    old = getattr(layer, name, None)
    attrs = {k: v for k, v in tensor.__dict__.items() if k not in ("weight_loader",
                                                                     "_weight_loader")}
    if isinstance(tensor, nn.Parameter):
        tensor = tensor.data
    keep = (isinstance(old, nn.Parameter) and not getattr(old, "requantization_source", False)
            and not (old.is_meta and not tensor.is_meta))
    if not keep:
        new = nn.Parameter(tensor, requires_grad=False)
        for k, v in attrs.items():
            setattr(new, k, v)
        if old is not None and hasattr(old, "weight_loader"):
            new.weight_loader = old.weight_loader
        setattr(layer, name, new)
        return new
    with torch.no_grad():
        _refill_parameter(old, tensor, name)
    for k, v in attrs.items():
        setattr(old, k, v)
    return old


def _dense(t: torch.Tensor) -> bool:
    """True if ``t``'s strides lay ``numel`` elements out without gaps or overlap (any order)."""
    expected = 1
    for stride, size in sorted((st, n) for n, st in zip(t.shape, t.stride()) if n != 1):
        if stride != expected:
            return False
        expected *= size
    return True


def _refill_parameter(old: nn.Parameter, new: torch.Tensor, name: str) -> None:
    if (old.shape == new.shape and old.stride() == new.stride() and old.dtype == new.dtype
            and old.device == new.device):
        if new.data_ptr() != old.data_ptr():
            old.data.copy_(new)
        return
    storage = old.untyped_storage()
    if new.device == old.device and new.untyped_storage().data_ptr() == storage.data_ptr():
        old.data = new  # a view of the kept storage: nothing to copy
        return
    if (new.dtype == old.dtype and new.device == old.device and old.storage_offset() == 0
            and _dense(new)
            and new.numel() * new.element_size() == storage.nbytes()):
        view = torch.empty(0, dtype=old.dtype, device=old.device)
        view.set_(storage, 0, new.shape, new.stride())
        view.copy_(new)
        old.data = view
        return
    logger.debug("replace_parameter: %s changes layout (%s %s -> %s %s); its address moves",
                 name, tuple(old.shape), old.dtype, tuple(new.shape), new.dtype)
    old.data = new
