"""Which storages the ops of a capture read, and which an op inside the capture produced.

:class:`ReadRecorder` records, by storage, every tensor the dispatched ops read (activations
and workspaces are *produced* inside the capture): the capture audit
(:mod:`derivgraph.audit.runtime.capture`) classifies them. It works around a CPU recording and
around a real ``torch.cuda.graph`` capture alike.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import torch
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_flatten

__all__ = ["ReadRecorder", "StorageKey", "StorageReads", "storage_key"]

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
