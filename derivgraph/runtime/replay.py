"""Capture a forward pass the way a CUDA graph does, and replay it.

On CUDA this is a real ``torch.cuda.CUDAGraph``. On CPU, :class:`CpuGraph` records every aten
op of the forward with the tensor *objects* it read from outside the capture, and replays the
ops against those same objects: like a CUDA graph, a replay reads the startup storage, not
whatever the model's attributes point at now. Both poison their output before each replay, so
a replay that computes nothing cannot pass for a correct one.

:class:`ReadRecorder` records, by storage, every tensor the ops of a capture read, and which
storages an op inside the capture produced (activations and workspaces): the capture audit
(:mod:`derivgraph.audit.runtime.capture`) classifies them. It works around a CPU recording and
around a real ``torch.cuda.graph`` capture alike.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import torch
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_flatten, tree_map

__all__ = ["CapturedGraph", "CpuGraph", "CpuPass", "ReadRecorder", "StorageReads", "capture",
           "storage_key"]

StorageKey = tuple[str, int]


def storage_key(t: torch.Tensor) -> StorageKey | None:
    """(device, address of the whole allocation), or None for tensors without storage."""
    if t.device.type == "meta" or t.layout != torch.strided:
        return None
    try:
        return (str(t.device), t.untyped_storage().data_ptr())
    except (RuntimeError, NotImplementedError):  # wrapper subclasses, functional tensors
        return None


@dataclass
class StorageReads:
    """What the captured ops read from one storage: a tensor of it, the ops, and its origin.

    ``tensor`` is kept (alive) only for external storages: activations are not held, so the
    recording does not change what the capture allocates.
    """

    tensor: torch.Tensor | None
    produced: bool  # an op inside the capture made it (activation / workspace)
    ops: list[str] = field(default_factory=list)

    def note(self, op: str) -> None:
        if op not in self.ops:
            self.ops.append(op)


class ReadRecorder(TorchDispatchMode):
    """Records every tensor the dispatched aten ops read, grouped by storage.

    A storage first seen as an op's output is *produced* (made inside the capture); one first
    seen as an input came from outside and stays external, whatever in-place op writes it
    later. ``only_while_capturing``: ignore ops dispatched outside a CUDA stream capture (for
    wrapping a call that may capture or replay).
    """

    def __init__(self, only_while_capturing: bool = False) -> None:
        super().__init__()
        self.only_while_capturing = only_while_capturing
        self.reads: dict[StorageKey, StorageReads] = {}
        self._produced: set[StorageKey] = set()
        self.ops = 0

    def _recording(self) -> bool:
        if not self.only_while_capturing:
            return True
        return torch.cuda.is_available() and torch.cuda.is_current_stream_capturing()

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):  # noqa: ANN001
        kwargs = kwargs or {}
        if not self._recording():
            return func(*args, **kwargs)
        op = str(func.overloadpacket.__name__) if hasattr(func, "overloadpacket") else str(func)
        self.ops += 1
        for t in tree_flatten((args, kwargs))[0]:
            if isinstance(t, torch.Tensor):
                key = storage_key(t)
                if key is None:
                    continue
                entry = self.reads.get(key)
                if entry is None:
                    produced = key in self._produced
                    entry = self.reads[key] = StorageReads(None if produced else t, produced)
                entry.note(op)
        out = func(*args, **kwargs)
        for t in tree_flatten(out)[0]:
            if isinstance(t, torch.Tensor):
                key = storage_key(t)
                if key is not None and key not in self.reads:
                    self._produced.add(key)
        return out


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


class CapturedGraph:
    """A captured forward with a static input and a static output."""

    def __init__(self, fn: Callable[[torch.Tensor], torch.Tensor], static_input: torch.Tensor):
        self.static_input = static_input
        self.device = static_input.device
        if self.device.type == "cuda":
            self._capture_cuda(fn)
        else:
            self._capture_cpu(fn)

    def _capture_cuda(self, fn: Callable[[torch.Tensor], torch.Tensor]) -> None:
        stream = torch.cuda.Stream()
        stream.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(stream), torch.no_grad():
            for _ in range(2):
                fn(self.static_input)
        torch.cuda.current_stream().wait_stream(stream)
        self._graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(self._graph), torch.no_grad():
            self.static_output = fn(self.static_input)
        self.external_ids: set[int] = set()

    def _capture_cpu(self, fn: Callable[[torch.Tensor], torch.Tensor]) -> None:
        recorder = CpuGraph()
        with torch.no_grad(), recorder:
            result = fn(self.static_input)
        self._recorder = recorder
        self._result_slot = recorder.slot_of(result)
        self.static_output = result.detach().clone()
        self.external_ids = set(recorder.externals)
        recorder.drop_capture_refs()

    def reads(self) -> list[torch.Tensor]:
        """The tensor objects the captured graph reads (CPU capture only)."""
        return list(self._recorder.externals.values()) if hasattr(self, "_recorder") else []

    def replay(self) -> torch.Tensor:
        """Poison the output, replay, and return the static output."""
        self.static_output.fill_(float("nan"))
        if self.device.type == "cuda":
            self._graph.replay()
            torch.cuda.synchronize()
        else:
            with torch.no_grad():
                env = self._recorder.replay_slots()
            self.static_output.copy_(env[self._result_slot])
        return self.static_output


class CpuPass:
    """A CPU recording of the reload pass (aten ops over fixed tensor objects), replayed as is."""

    def __init__(self, fn: Callable[[], Any]):
        recorder = CpuGraph()
        with torch.no_grad(), recorder:
            fn()
        recorder.drop_capture_refs()
        self._recorder = recorder

    def replay(self) -> None:
        self._recorder.replay_slots()


def capture(
    fn: Callable[[torch.Tensor], torch.Tensor], static_input: torch.Tensor
) -> CapturedGraph:
    """Capture ``fn(static_input)``: a CUDA graph on CUDA, a :class:`CpuGraph` on CPU."""
    return CapturedGraph(fn, static_input)
