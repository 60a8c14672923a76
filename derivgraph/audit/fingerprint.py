"""Value fingerprints of tensors: exact change detectors, cheap enough for every tensor.

On CPU a SHA-1 of the bytes; on accelerators three exact integer sums of the bytes computed on
the device (no host copy, no float rounding). :class:`DeviceDigests` batches the digests of a
whole census: small tensors go through a few kernels together and every result is read back
with one host synchronization per device.
"""

from __future__ import annotations

import hashlib
from typing import Any

import torch
from torch import nn

__all__ = ["DeviceDigests", "fingerprint", "fingerprint_parts", "fingerprints", "has_storage"]


def has_storage(t: torch.Tensor) -> bool:
    """False for wrapper subclasses (their data lives in inner tensors)."""
    if type(t) is torch.Tensor or type(t) is nn.Parameter:
        return True
    try:
        t.untyped_storage().data_ptr()
    except (RuntimeError, NotImplementedError, TypeError):
        return False
    return True


def fingerprint(t: torch.Tensor) -> str | None:
    """A value fingerprint of ``t``'s bytes (shape and dtype included).

    On CPU a SHA-1 of the bytes (hardware-accelerated on most hosts; a change detector, not
    a security measure); on accelerators three exact integer sums of the bytes (plain,
    position-weighted mod 65521 and mod 65519), computed on the device in chunks, so no host
    copy and no float rounding. ``None`` on ``meta`` and without storage.
    """
    parts = fingerprint_parts(t)
    if parts is None or isinstance(parts, str):
        return parts
    head, raw = parts
    return head + _format_sums(_device_sums(raw).tolist())


def fingerprint_parts(t: torch.Tensor) -> str | tuple[str, torch.Tensor] | None:
    """The fingerprint, or for a device tensor its head and its bytes (flat uint8)."""
    if t.device.type == "meta" or t.is_sparse or t.layout != torch.strided or not has_storage(t):
        return None
    data = t.detach().resolve_conj().resolve_neg()
    head = f"{str(data.dtype).removeprefix('torch.')}{list(data.shape)}:"
    if data.numel() == 0:
        return head
    raw = data.contiguous().reshape(-1).view(torch.uint8)
    if data.device.type == "cpu":
        return head + hashlib.sha1(memoryview(raw.numpy()), usedforsecurity=False).hexdigest()
    return head, raw


def _device_sums(raw: torch.Tensor, chunk: int = 1 << 24) -> torch.Tensor:
    """[sum, sum * (i % 65521 + 1), sum * (i % 65519 + 1)] of the bytes, int64 on device."""
    acc = torch.zeros(3, dtype=torch.int64, device=raw.device)
    for start in range(0, raw.numel(), chunk):
        part = raw[start:start + chunk].to(torch.int64)
        pos = torch.arange(start, start + part.numel(), device=raw.device, dtype=torch.int64)
        acc += torch.stack([part.sum(), (part * (pos % 65521 + 1)).sum(),
                            (part * (pos % 65519 + 1)).sum()])
    return acc


def _batched_sums(raws: list[torch.Tensor]) -> torch.Tensor:
    """``_device_sums`` of many small flat uint8 tensors in a few kernels: [n, 3] int64."""
    dev = raws[0].device
    lengths = torch.tensor([r.numel() for r in raws], device=dev)
    flat = torch.cat(raws).to(torch.int64)
    seg = torch.repeat_interleave(torch.arange(len(raws), device=dev), lengths)
    pos = torch.arange(flat.numel(), device=dev) - (torch.cumsum(lengths, 0) - lengths)[seg]
    terms = torch.stack([flat, flat * (pos % 65521 + 1), flat * (pos % 65519 + 1)], 1)
    return torch.zeros(len(raws), 3, dtype=torch.int64, device=dev).index_add_(0, seg, terms)


def _format_sums(sums: list[int]) -> str:
    return ".".join(f"{v:x}" for v in sums)


def _device_digest(raw: torch.Tensor, chunk: int = 1 << 24) -> str:
    """The accelerator digest of a flat uint8 tensor (any device; for tests on CPU)."""
    return _format_sums(_device_sums(raw, chunk).tolist())


_SMALL = 1 << 20  # device tensors up to this many bytes are digested in batches
_BATCH = 1 << 24  # bytes per batch


class DeviceDigests:
    """Digests of device tensors, synchronized once per device at the end of a census."""

    def __init__(self) -> None:
        self.small: dict[torch.device, list[tuple[Any, str, torch.Tensor]]] = {}
        self.small_bytes: dict[torch.device, int] = {}
        self.done: dict[torch.device, list[tuple[Any, str, torch.Tensor]]] = {}

    def add(self, entry: Any, head: str, raw: torch.Tensor) -> None:
        if raw.numel() > _SMALL:  # no copy is kept alive: reduce it now, read it later
            self.done.setdefault(raw.device, []).append((entry, head, _device_sums(raw)))
            return
        self.small.setdefault(raw.device, []).append((entry, head, raw))
        self.small_bytes[raw.device] = self.small_bytes.get(raw.device, 0) + raw.numel()
        if self.small_bytes[raw.device] >= _BATCH:
            self._reduce(raw.device)

    def _reduce(self, device: torch.device) -> None:
        batch = self.small.pop(device, [])
        self.small_bytes.pop(device, None)
        if batch:
            sums = _batched_sums([r for _, _, r in batch])
            self.done.setdefault(device, []).extend(
                (e, h, s) for (e, h, _), s in zip(batch, sums.unbind(0)))

    def finish(self) -> None:
        for device in list(self.small):
            self._reduce(device)
        for items in self.done.values():
            values = torch.stack([s for _, _, s in items]).tolist()  # one host sync
            for (entry, head, _), sums in zip(items, values):
                entry.fingerprint = head + _format_sums(sums)
        self.done.clear()


class _Slot:
    __slots__ = ("fingerprint",)

    def __init__(self) -> None:
        self.fingerprint: str | None = None


def fingerprints(tensors: dict[str, torch.Tensor]) -> dict[str, str | None]:
    """:func:`fingerprint` of many tensors, device digests batched (one sync per device)."""
    digests = DeviceDigests()
    slots: dict[str, _Slot] = {}
    with torch.no_grad():
        for name, t in tensors.items():
            slot = slots[name] = _Slot()
            parts = fingerprint_parts(t)
            if isinstance(parts, tuple):
                digests.add(slot, *parts)
            else:
                slot.fingerprint = parts
    digests.finish()
    return {name: slot.fingerprint for name, slot in slots.items()}
