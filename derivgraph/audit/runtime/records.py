"""What a census records: each reachable tensor's identity (object, address, layout) and the
entries of a census, keyed by canonical path."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import torch

from derivgraph.audit.runtime.fingerprint import has_storage

__all__ = ["Census", "CensusEntry", "TensorIdentity"]


@dataclass(frozen=True)
class TensorIdentity:
    """Where a tensor lives: what a captured graph bakes in.

    ``obj_id`` is the Python object; ``data_ptr`` the first element's address (0 on ``meta``
    and for tensors without storage); ``storage_ptr``/``storage_nbytes`` the whole
    allocation, so two tensors sharing one storage (``.set_()``, views) can be told apart
    from two that merely sit next to each other.
    """

    obj_id: int
    data_ptr: int
    storage_offset: int
    shape: tuple[int, ...]
    stride: tuple[int, ...]
    dtype: str
    device: str
    storage_ptr: int = 0
    storage_nbytes: int = 0

    @classmethod
    def of(cls, t: torch.Tensor) -> TensorIdentity:
        """The identity of ``t`` now."""
        data_ptr = storage_ptr = nbytes = offset = 0
        stride: tuple[int, ...] = ()
        if not t.is_sparse and t.layout == torch.strided:
            stride = tuple(t.stride())
            offset = t.storage_offset()
            if t.device.type != "meta" and has_storage(t):
                storage = t.untyped_storage()
                data_ptr, storage_ptr, nbytes = t.data_ptr(), storage.data_ptr(), storage.nbytes()
        return cls(id(t), data_ptr, offset, tuple(t.shape), stride,
                   str(t.dtype).removeprefix("torch."), str(t.device), storage_ptr, nbytes)

    def same_place(self, other: TensorIdentity) -> bool:
        """Same object at the same address with the same layout."""
        return self == other

    def same_address(self, other: TensorIdentity) -> bool:
        """Same address and layout, whatever the object."""
        return self.address() == other.address()

    def address(self) -> tuple[Any, ...]:
        """Everything but the object id: what a kernel reading this tensor depends on."""
        return (self.data_ptr, self.storage_offset, self.shape, self.stride, self.dtype,
                self.device)

    def describe(self) -> str:
        """A short readable form: ``float32[4, 8] cpu @0x7f..+0``."""
        shape = ", ".join(map(str, self.shape))
        return f"{self.dtype}[{shape}] {self.device} @{self.data_ptr:#x}+{self.storage_offset}"


@dataclass
class CensusEntry:
    """One reachable tensor or Python scalar, at its canonical path.

    ``kind`` is parameter | buffer | attribute | scalar; ``place`` says where it hides
    (parameter, buffer, attribute, item, partial, closure, default, tensor-attribute);
    ``holder`` is the class name of the object holding it.
    """

    path: str
    kind: str
    identity: TensorIdentity | None
    fingerprint: Any
    value: Any = None  # the tensor itself (kept alive so ids stay unique) or the number
    aliases: list[str] = field(default_factory=list)
    place: str = "attribute"
    holder: str = ""

    @property
    def is_tensor(self) -> bool:
        return self.identity is not None

    def paths(self) -> list[str]:
        """The canonical path followed by every alias."""
        return [self.path, *self.aliases]


@dataclass
class Census:
    """Canonical path -> entry for every tensor and scalar reachable from a model.

    ``objects`` counts the objects walked; ``truncated`` is set when ``max_objects`` stopped
    the walk; ``depth_limited`` counts objects not entered because of ``max_depth``.
    """

    entries: dict[str, CensusEntry] = field(default_factory=dict)
    truncated: bool = False
    depth_limited: int = 0
    objects: int = 0
    seconds: float = 0.0
    _index: dict[str, CensusEntry] | None = field(default=None, repr=False, compare=False)

    def __len__(self) -> int:
        return len(self.entries)

    def tensors(self) -> dict[str, CensusEntry]:
        """Canonical path -> entry, tensors only."""
        return {p: e for p, e in self.entries.items() if e.identity is not None}

    def scalars(self) -> dict[str, CensusEntry]:
        """Canonical path -> entry, Python scalars only."""
        return {p: e for p, e in self.entries.items() if e.identity is None}

    def all_paths(self) -> dict[str, str]:
        """Every path (aliases too) -> the canonical path of its entry."""
        return {p: e.path for p, e in self.index().items()}

    def index(self) -> dict[str, CensusEntry]:
        """Every path (aliases too) -> its entry."""
        if self._index is None:
            index: dict[str, CensusEntry] = {}
            for e in self.entries.values():
                for p in e.paths():
                    index.setdefault(p, e)
            self._index = index
        return self._index

    def get(self, path: str) -> CensusEntry | None:
        """The entry at ``path`` (canonical or alias), or ``None``."""
        return self.index().get(path)

    def nbytes(self) -> int:
        """Bytes of all tensors with storage (each storage counted once)."""
        seen: dict[int, int] = {}
        for e in self.entries.values():
            ident = e.identity
            if ident is not None and ident.storage_ptr:
                seen[ident.storage_ptr] = max(seen.get(ident.storage_ptr, 0), ident.storage_nbytes)
        return sum(seen.values())
