"""Record aten ops the way a CUDA graph does, and replay them (the CPU stand-in).

:class:`CpuGraph` records every aten op with the tensor *objects* it read from outside the
recording, and replays the ops against those same objects: like a CUDA graph, a replay reads
the startup storage, not whatever the model's attributes point at now. :class:`CpuPass` is the
recording of a plan's reload pass (:meth:`derivgraph.runtime.plan.Plan.capture`); the forward
capture of the demo and the tests is :mod:`derivgraph.tools.forward_capture`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

import torch
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_map

__all__ = ["CpuGraph", "CpuPass", "WriteRecorder", "pinned", "storages_read"]

class CpuGraph(TorchDispatchMode):
    """Records aten ops and the external tensor objects they read; replays them."""

    def __init__(self) -> None:
        super().__init__()
        self.ops: list[tuple[Any, Any, Any, Any]] = []
        self._made: dict[int, int] = {}
        self._slots = 0
        self.externals: dict[int, torch.Tensor] = {}

    def _encode(self, value: Any) -> Any:
        if isinstance(value, torch.Tensor):
            slot = self._made.get(id(value))
            if slot is not None:
                return ("tmp", slot)
            self.externals[id(value)] = value
            return ("ext", value)
        return ("val", value)

    def _register(self, value: Any) -> Any:
        if isinstance(value, torch.Tensor):
            self._slots += 1
            self._made[id(value)] = self._slots
            return ("tmp", self._slots)
        return ("val", value)

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):  # noqa: ANN001
        kwargs = kwargs or {}
        out = func(*args, **kwargs)
        enc_args = tree_map(self._encode, args)
        enc_kwargs = tree_map(self._encode, kwargs)
        # keep outputs alive during capture so ids stay unique
        self.ops.append((func, enc_args, enc_kwargs, tree_map(self._register, out), out))
        return out

    def slot_of(self, t: torch.Tensor) -> int:
        return self._made[id(t)]

    def replay_slots(self) -> dict[int, torch.Tensor]:
        env: dict[int, Any] = {}

        def decode(item: Any) -> Any:
            if isinstance(item, tuple) and len(item) == 2 and item[0] in ("tmp", "ext", "val"):
                tag, value = item
                return env[value] if tag == "tmp" else value
            return item

        for func, enc_args, enc_kwargs, enc_out, _ in self.ops:
            args = _decode_tree(enc_args, decode)
            kwargs = _decode_tree(enc_kwargs, decode)
            out = func(*args, **kwargs)
            _bind_outputs(enc_out, out, env)
        return env

    def drop_capture_refs(self) -> None:
        self.ops = [(f, a, k, o, None) for f, a, k, o, _ in self.ops]


def _is_leaf(item: Any) -> bool:
    return isinstance(item, tuple) and len(item) == 2 and item[0] in ("tmp", "ext", "val")


def _decode_tree(tree: Any, decode: Callable[[Any], Any]) -> Any:
    if _is_leaf(tree):
        return decode(tree)
    if isinstance(tree, (list, tuple)):
        return type(tree)(_decode_tree(t, decode) for t in tree)
    if isinstance(tree, dict):
        return {k: _decode_tree(v, decode) for k, v in tree.items()}
    return tree


def _bind_outputs(enc: Any, out: Any, env: dict[int, Any]) -> None:
    if _is_leaf(enc):
        if enc[0] == "tmp":
            env[enc[1]] = out
        return
    if isinstance(enc, (list, tuple)):
        for e, o in zip(enc, out):
            _bind_outputs(e, o, env)


class WriteRecorder(TorchDispatchMode):
    """The storage of every tensor an aten op writes (``Tensor(a!)`` in its schema)."""

    def __init__(self) -> None:
        super().__init__()
        self.written: set[int] = set()

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):  # noqa: ANN001
        kwargs = kwargs or {}
        for i, arg in enumerate(func._schema.arguments):
            if arg.alias_info is None or not arg.alias_info.is_write:
                continue
            value = args[i] if i < len(args) else kwargs.get(arg.name)
            for t in value if isinstance(value, (list, tuple)) else (value,):
                if isinstance(t, torch.Tensor) and t.device.type != "meta":
                    self.written.add(t.untyped_storage().data_ptr())
        return func(*args, **kwargs)


def pinned(t: torch.Tensor) -> torch.Tensor:
    """A new tensor object over ``t``'s current storage, offset, sizes and strides: what a CUDA
    graph bakes in (an address), kept alive by the recording whatever ``t.data`` becomes."""
    return torch.empty(0, dtype=t.dtype, device=t.device).set_(
        t.untyped_storage(), t.storage_offset(), t.size(), t.stride())


def storages_read(values: Iterable[Any]) -> list[Any]:
    """The storage of every tensor (and every storage) in ``values`` (lists, tuples and dicts
    are looked into)."""
    out: dict[int, Any] = {}
    stack = list(values)
    while stack:
        value = stack.pop()
        if isinstance(value, torch.UntypedStorage):  # held by a flat group of the pass
            out.setdefault(value.data_ptr(), value)
        elif isinstance(value, torch.Tensor):
            if value.device.type != "meta":
                storage = value.untyped_storage()
                out.setdefault(storage.data_ptr(), storage)
        elif isinstance(value, (list, tuple)):
            stack.extend(value)
        elif isinstance(value, dict):
            stack.extend(value.values())
    return list(out.values())


class CpuPass:
    """A CPU recording of the reload pass, replayed like a CUDA graph.

    Every tensor the pass read or wrote from outside the recording is replayed through a
    :func:`pinned` alias of the storage it had at capture: a replay reads and writes the
    startup addresses, never whatever ``t.data`` points at now, and the recording keeps those
    storages alive. Arguments without a recorded intermediate are decoded once, at capture, so
    a replay is one call per aten op.
    """

    def __init__(self, fn: Callable[[], Any]):
        recorder = CpuGraph()
        with torch.no_grad(), recorder:
            fn()
        recorder.drop_capture_refs()
        pins = {key: pinned(t) for key, t in recorder.externals.items()}
        read = {slot for _f, a, k, _o, _ in recorder.ops for slot in _tmp_slots((a, k))}

        def decode(item: Any) -> Any:
            tag, value = item
            return pins[id(value)] if tag == "ext" else value

        self._ops: list[tuple[Any, Any, Any, bool, Any]] = []
        for func, enc_args, enc_kwargs, enc_out, _ in recorder.ops:
            static = not _tmp_slots((enc_args, enc_kwargs))
            if static:
                enc_args = _decode_tree(enc_args, decode)
                enc_kwargs = _decode_tree(enc_kwargs, decode)
            binds = enc_out if read & set(_tmp_slots(enc_out)) else None
            self._ops.append((func, enc_args, enc_kwargs, static, binds))
        self._pins = pins

    def storages(self) -> list[Any]:
        """The storages the recording reads and writes (kept alive by it)."""
        return storages_read(self._pins.values())

    def replay(self) -> None:
        env: dict[int, Any] = {}
        pins = self._pins

        def decode(item: Any) -> Any:
            tag, value = item
            return env[value] if tag == "tmp" else pins[id(value)] if tag == "ext" else value

        for func, args, kwargs, static, binds in self._ops:
            if not static:
                args = _decode_tree(args, decode)
                kwargs = _decode_tree(kwargs, decode)
            out = func(*args, **kwargs)
            if binds is not None:
                _bind_outputs(binds, out, env)


def _tmp_slots(tree: Any) -> list[int]:
    """The recorded intermediates an encoded tree refers to."""
    if _is_leaf(tree):
        return [tree[1]] if tree[0] == "tmp" else []
    if isinstance(tree, (list, tuple)):
        return [s for t in tree for s in _tmp_slots(t)]
    if isinstance(tree, dict):
        return [s for t in tree.values() for s in _tmp_slots(t)]
    return []
