"""Record aten ops the way a CUDA graph does, and replay them (the CPU stand-in).

:class:`CpuGraph` records every aten op with the tensor *objects* it read from outside the
recording, and replays the ops against those same objects: like a CUDA graph, a replay reads
the startup storage, not whatever the model's attributes point at now. :class:`CpuPass` is the
recording of a plan's reload pass (:meth:`derivgraph.runtime.plan.Plan.capture`); the forward
capture of the demo and the tests is :mod:`derivgraph.tools.forward_capture`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_map

__all__ = ["CpuGraph", "CpuPass"]

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
