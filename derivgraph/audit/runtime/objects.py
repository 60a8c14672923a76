"""How the census walk enters an object: which children it has, under which path pieces.

What an object of a class is to the walk (a module, a tensor, a ``functools.partial``, a
function, a mapping, a sequence or a plain object with dataclass fields and slots; a leaf tensor,
float, int or atom) is decided once per class and cached; the values are read from each object
on every walk, so a changed structure is always seen.
"""

from __future__ import annotations

import dataclasses
import enum
import functools
import logging
import types
import weakref
from collections import deque
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

import torch
from torch import nn

__all__ = ["MODULE_INTERNALS", "Leaf", "attributes", "join_path", "key_piece", "leaf_kind",
           "registered_children"]

logger = logging.getLogger(__name__)

#: nn.Module bookkeeping that holds no model state (hooks are keyed by global counters).
_MODULE_INTERNALS = frozenset({
    "_parameters", "_buffers", "_modules", "_non_persistent_buffers_set", "training",
    "_backward_pre_hooks", "_backward_hooks", "_is_full_backward_hook", "_forward_hooks",
    "_forward_hooks_with_kwargs", "_forward_hooks_always_called", "_forward_pre_hooks",
    "_forward_pre_hooks_with_kwargs", "_state_dict_hooks", "_state_dict_pre_hooks",
    "_load_state_dict_pre_hooks", "_load_state_dict_post_hooks", "_compiled_call_impl",
})
MODULE_INTERNALS = _MODULE_INTERNALS

_ATOMS = (str, bytes, bytearray, int, bool, complex, type(None), enum.Enum, torch.dtype,
          torch.device, torch.Size, torch.layout, torch.memory_format, range, slice)

_OPAQUE = (types.ModuleType, type, types.BuiltinFunctionType, types.MethodWrapperType,
           types.WrapperDescriptorType, types.MethodDescriptorType, types.CodeType,
           types.FrameType, types.GeneratorType, types.CoroutineType, weakref.ReferenceType,
           torch.Generator, torch.Stream, torch.Event, logging.Logger, set, frozenset)

#: Dict keys rendered with repr: stable across processes and runs.
_KEY_ATOMS = (str, int, float, bool, type(None), enum.Enum, torch.dtype, torch.device)


def registered_children(module: nn.Module) -> Iterator[tuple[str, Any, str]]:
    """(path piece, child, kind) of a module's parameters, buffers and submodules."""
    for name, p in module._parameters.items():
        if p is not None:
            yield "." + name, p, "parameter"
    for name, b in module._buffers.items():
        if b is not None:
            yield "." + name, b, "buffer"
    for name, m in module._modules.items():
        if m is not None:
            yield "." + name, m, "module"


def key_piece(key: Any, index: int) -> str | None:
    """The path piece of a dict item (``['k']``), or ``None`` for a tensor key (not walked)."""
    if isinstance(key, _KEY_ATOMS):
        return f"[{key!r}]"
    if isinstance(key, tuple) and all(isinstance(k, _KEY_ATOMS) for k in key):
        return f"[{key!r}]"
    if isinstance(key, torch.Tensor):
        return None  # a tensor used as a key is not state a kernel reads through the dict
    return f"[<{type(key).__name__} #{index}>]"


class _Shape(enum.Enum):
    """How the walk enters an object of a class (decided once per class, see ``_shape``)."""

    MODULE = enum.auto()
    TENSOR = enum.auto()
    PARTIAL = enum.auto()
    METHOD = enum.auto()
    FUNCTION = enum.auto()
    MAPPING = enum.auto()
    SEQUENCE = enum.auto()
    OBJECT = enum.auto()


class Leaf(enum.Enum):
    """What a reached value is to the walk (decided once per class, see ``leaf_kind``)."""

    TENSOR = enum.auto()
    FLOAT = enum.auto()
    INT = enum.auto()
    ATOM = enum.auto()  # an atom or an opaque object: not walked, not recorded
    OBJECT = enum.auto()


@dataclass(frozen=True)
class _ClassWalk:
    """How the walk enters objects of one class: their shape, dataclass fields and slots."""

    shape: _Shape
    fields: tuple[str, ...] = ()
    slots: tuple[str, ...] = ()



#: Per-class caches (a class's answers never change; capped so dynamic classes cannot pile up).
_CLASS_WALKS: dict[type, _ClassWalk] = {}

_LEAVES: dict[type, Leaf] = {}

_CACHE_CAP = 65_536


def _class_walk_of(obj: Any) -> _ClassWalk:
    if isinstance(obj, nn.Module):
        return _ClassWalk(_Shape.MODULE)
    if isinstance(obj, torch.Tensor):
        return _ClassWalk(_Shape.TENSOR)
    if isinstance(obj, functools.partial):
        return _ClassWalk(_Shape.PARTIAL)
    if isinstance(obj, types.MethodType):
        return _ClassWalk(_Shape.METHOD)
    if isinstance(obj, types.FunctionType):
        return _ClassWalk(_Shape.FUNCTION)
    if isinstance(obj, Mapping):
        return _ClassWalk(_Shape.MAPPING)
    if isinstance(obj, (list, tuple, deque)):
        return _ClassWalk(_Shape.SEQUENCE)
    fields = tuple(f.name for f in dataclasses.fields(obj)) if dataclasses.is_dataclass(obj) \
        else ()
    slots = tuple(dict.fromkeys(
        name for klass in type(obj).__mro__ for name in getattr(klass, "__slots__", ())
        if not name.startswith("__")))
    return _ClassWalk(_Shape.OBJECT, fields, slots)


def _remember(cache: dict[type, Any], obj: Any, make: Callable[[Any], Any]) -> Any:
    """``make(obj)`` stored for ``type(obj)`` (the slow path of the per-class caches; bounded)."""
    if len(cache) >= _CACHE_CAP:
        cache.clear()
    value = cache[type(obj)] = make(obj)
    return value


def _shape(obj: Any) -> _ClassWalk:
    return _CLASS_WALKS.get(type(obj)) or _remember(_CLASS_WALKS, obj, _class_walk_of)


def _leaf_of(child: Any) -> Leaf:
    if isinstance(child, torch.Tensor):
        return Leaf.TENSOR
    if isinstance(child, float):
        return Leaf.FLOAT
    if isinstance(child, int) and not isinstance(child, (bool, enum.Enum)):
        return Leaf.INT
    if isinstance(child, _ATOMS) or isinstance(child, _OPAQUE):
        return Leaf.ATOM
    return Leaf.OBJECT


def leaf_kind(child: Any) -> Leaf:
    """What ``child`` is to the walk (cached per class)."""
    return _LEAVES.get(type(child)) or _remember(_LEAVES, child, _leaf_of)


def attributes(obj: Any) -> Iterator[tuple[str, Any, str]]:
    """(path piece, child, place) of everything an object holds but the registered module tree."""
    how = _shape(obj)
    shape = how.shape
    if shape is _Shape.MODULE:
        for name, v in obj.__dict__.items():
            if name not in _MODULE_INTERNALS:
                yield "." + name, v, "attribute"
        return
    if shape is _Shape.TENSOR:
        inner = getattr(type(obj), "__tensor_flatten__", None)
        names: set[str] = set()
        if inner is not None and type(obj) not in (torch.Tensor, nn.Parameter):
            try:
                names = set(obj.__tensor_flatten__()[0])
            except (RuntimeError, TypeError, NotImplementedError) as exc:
                logger.debug("census: cannot flatten %s: %s", type(obj).__name__, exc)
        for name in sorted(names):
            yield "." + name, getattr(obj, name, None), "inner"
        for name, v in obj.__dict__.items():
            if name not in names:
                yield "." + name, v, "tensor-attribute"
        return
    if shape is _Shape.PARTIAL:
        yield ".partial.func", obj.func, "partial"
        for i, a in enumerate(obj.args):
            yield f".partial.args[{i}]", a, "partial"
        for k, v in (obj.keywords or {}).items():
            yield f".partial.keywords[{k!r}]", v, "partial"
        return
    if shape is _Shape.METHOD:
        yield ".__func__", obj.__func__, "attribute"
        yield ".__self__", obj.__self__, "attribute"
        return
    if shape is _Shape.FUNCTION:
        for name, cell in zip(obj.__code__.co_freevars, obj.__closure__ or ()):
            try:
                yield f".closure.{name}", cell.cell_contents, "closure"
            except ValueError:  # an empty cell holds nothing to record
                continue
        for i, v in enumerate(obj.__defaults__ or ()):
            yield f".defaults[{i}]", v, "default"
        for k, v in (obj.__kwdefaults__ or {}).items():
            yield f".kwdefaults[{k!r}]", v, "default"
        return
    if shape is _Shape.MAPPING:
        for i, (k, v) in enumerate(list(obj.items())):
            piece = key_piece(k, i)
            if piece is not None:
                yield piece, v, "item"
        return
    if shape is _Shape.SEQUENCE:
        for i, v in enumerate(obj):
            yield f"[{i}]", v, "item"
        return
    for name in how.fields:
        yield "." + name, getattr(obj, name, None), "attribute"
    state = getattr(obj, "__dict__", None) or {}
    fields = how.fields
    for name, v in state.items():
        if name not in fields:
            yield "." + name, v, "attribute"
    for name in how.slots:
        if name not in fields and name not in state:
            yield "." + name, getattr(obj, name, None), "attribute"


def join_path(path: str, piece: str) -> str:
    """``path`` extended by one piece (``.name``, ``[0]``); a leading dot is dropped at the root."""
    if not path:
        return piece[1:] if piece.startswith(".") else piece
    return path + piece
