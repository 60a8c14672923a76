"""A census of every tensor (and Python float) reachable from a model.

The walk visits parameters, buffers and plain attributes of modules; attributes of nested
non-module objects (quant methods, kernels, experts objects, quant-config dataclasses and their
descriptors, attention impls); lists, tuples and dicts; ``functools.partial`` args and
keywords; and closure cells of functions stored on objects. It is bounded in depth and object
count and safe against cycles. Each tensor is recorded once, at the first path found, with its
identity (object id, data_ptr, offset, shape, stride, dtype, device) and a value fingerprint;
other paths to the same object are kept as aliases.
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import types
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

import torch
from torch import nn

__all__ = ["Census", "CensusEntry", "TensorIdentity", "fingerprint", "take_census"]

_MODULE_INTERNALS = frozenset({
    "_parameters", "_buffers", "_modules", "_non_persistent_buffers_set", "training",
    "_backward_pre_hooks", "_backward_hooks", "_is_full_backward_hook", "_forward_hooks",
    "_forward_hooks_with_kwargs", "_forward_hooks_always_called", "_forward_pre_hooks",
    "_forward_pre_hooks_with_kwargs", "_state_dict_hooks", "_state_dict_pre_hooks",
    "_load_state_dict_pre_hooks", "_load_state_dict_post_hooks", "_compiled_call_impl",
})
_ATOMS = (str, bytes, int, bool, complex, type(None), torch.dtype, torch.device, torch.Size)
_OPAQUE = (types.ModuleType, type, types.BuiltinFunctionType, types.MethodWrapperType)


@dataclass(frozen=True)
class TensorIdentity:
    """Where a tensor lives: what a captured graph bakes in."""

    obj_id: int
    data_ptr: int
    storage_offset: int
    shape: tuple[int, ...]
    stride: tuple[int, ...]
    dtype: str
    device: str

    @classmethod
    def of(cls, t: torch.Tensor) -> TensorIdentity:
        meta = t.device.type == "meta"
        return cls(id(t), 0 if meta else t.data_ptr(), t.storage_offset(), tuple(t.shape),
                   tuple(t.stride()), str(t.dtype).removeprefix("torch."), str(t.device))

    def same_place(self, other: TensorIdentity) -> bool:
        """Same object at the same address with the same layout."""
        return self == other


@dataclass
class CensusEntry:
    """One reachable tensor or Python float."""

    path: str
    kind: str  # parameter | buffer | attribute | scalar
    identity: TensorIdentity | None
    fingerprint: Any
    value: Any = None  # the tensor itself (kept alive so ids stay unique) or the float
    aliases: list[str] = field(default_factory=list)


def fingerprint(t: torch.Tensor) -> Any:
    """A value fingerprint: exact bytes hash on CPU, three float64 reductions elsewhere."""
    if t.device.type == "meta":
        return None
    data = t.detach()
    if data.device.type == "cpu":
        raw = data.contiguous().view(-1).view(torch.uint8) if data.numel() else data
        return hashlib.blake2b(raw.numpy().tobytes() if data.numel() else b"",
                               digest_size=16).hexdigest()
    v = data.reshape(-1).to(torch.float64)
    idx = torch.arange(v.numel(), device=v.device, dtype=torch.float64)
    return (float(v.sum()), float((v * v).sum()), float((v * (idx % 97)).sum()))


@dataclass
class Census:
    """Path -> entry for every tensor and float reachable from a model."""

    entries: dict[str, CensusEntry] = field(default_factory=dict)
    truncated: bool = False

    def __len__(self) -> int:
        return len(self.entries)

    def tensors(self) -> dict[str, CensusEntry]:
        return {p: e for p, e in self.entries.items() if e.identity is not None}

    def all_paths(self) -> dict[str, str]:
        """Every path (aliases too) -> the primary path of its entry."""
        out = {}
        for p, e in self.entries.items():
            out[p] = p
            for a in e.aliases:
                out[a] = p
        return out


def _children(obj: Any) -> Iterator[tuple[str, Any, str]]:
    """(path piece, child, kind) for everything an object holds."""
    if isinstance(obj, nn.Module):
        for name, p in obj._parameters.items():
            if p is not None:
                yield name, p, "parameter"
        for name, b in obj._buffers.items():
            if b is not None:
                yield name, b, "buffer"
        for name, m in obj._modules.items():
            if m is not None:
                yield name, m, "module"
        for name, v in obj.__dict__.items():
            if name not in _MODULE_INTERNALS:
                yield name, v, "attribute"
        return
    if isinstance(obj, functools.partial):
        yield "partial.func", obj.func, "attribute"
        for i, a in enumerate(obj.args):
            yield f"partial.args[{i}]", a, "attribute"
        for k, v in (obj.keywords or {}).items():
            yield f"partial.keywords[{k}]", v, "attribute"
        return
    if isinstance(obj, types.MethodType):
        yield "__func__", obj.__func__, "attribute"
        return
    if isinstance(obj, types.FunctionType):
        for name, cell in zip(obj.__code__.co_freevars, obj.__closure__ or ()):
            try:
                yield f"<closure:{name}>", cell.cell_contents, "attribute"
            except ValueError:  # an empty cell: nothing to record
                continue
        return
    if isinstance(obj, Mapping):
        for k, v in list(obj.items()):
            if isinstance(k, (str, int)):
                yield f"[{k!r}]" if isinstance(k, str) else f"[{k}]", v, "attribute"
        return
    if isinstance(obj, (list, tuple)):
        for i, v in enumerate(obj):
            yield f"[{i}]", v, "attribute"
        return
    seen: set[str] = set()
    if dataclasses.is_dataclass(obj):
        for f in dataclasses.fields(obj):
            seen.add(f.name)
            yield f.name, getattr(obj, f.name, None), "attribute"
    for name, v in getattr(obj, "__dict__", {}).items():
        if name not in seen:
            seen.add(name)
            yield name, v, "attribute"
    for klass in type(obj).__mro__:
        for name in getattr(klass, "__slots__", ()):
            if name not in seen and not name.startswith("__"):
                seen.add(name)
                yield name, getattr(obj, name, None), "attribute"


def _join(path: str, piece: str) -> str:
    if not path:
        return piece
    return f"{path}{piece}" if piece.startswith("[") else f"{path}.{piece}"


def take_census(model: Any, *, max_depth: int = 12, max_objects: int = 500_000,
                fingerprints: bool = True, floats: bool = True) -> Census:
    """Walk everything reachable from ``model`` (see module docstring)."""
    census = Census()
    by_tensor: dict[int, CensusEntry] = {}
    visited: set[int] = set()
    stack: list[tuple[str, Any, int]] = [("", model, 0)]
    count = 0
    while stack:
        path, obj, depth = stack.pop()
        if id(obj) in visited:
            continue
        visited.add(id(obj))
        count += 1
        if count > max_objects:
            census.truncated = True
            break
        children = list(_children(obj))
        for piece, child, kind in reversed(children):
            child_path = _join(path, piece)
            if isinstance(child, torch.Tensor):
                known = by_tensor.get(id(child))
                if known is not None:
                    known.aliases.append(child_path)
                    continue
                entry = CensusEntry(child_path, kind, TensorIdentity.of(child),
                                    fingerprint(child) if fingerprints else None, child)
                by_tensor[id(child)] = entry
                census.entries[child_path] = entry
            elif isinstance(child, float) and floats:
                census.entries[child_path] = CensusEntry(child_path, "scalar", None, child, child)
            elif isinstance(child, _ATOMS) or isinstance(child, _OPAQUE) or child is None:
                continue
            elif depth + 1 <= max_depth:
                stack.append((child_path, child, depth + 1))
    census.entries = dict(sorted(census.entries.items()))
    return census
