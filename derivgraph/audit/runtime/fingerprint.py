"""Value fingerprints of tensors: exact change detectors, cheap enough for every tensor.

On CPU a SHA-1 of the bytes; on accelerators three exact integer sums of the bytes computed on
the device (no host copy, no float rounding). :class:`Digests` batches the fingerprints of a
whole census: small CPU tensors of one dtype are copied into one buffer and hashed slice by
slice (one copy instead of a dozen tensor calls each), small device tensors go through a few
kernels together, and every device result is read back with one host synchronization per
device. :class:`HostHashes` is the CPU half, also used for sampled digests
(:mod:`derivgraph.audit.runtime.freshness`). A batched fingerprint equals :func:`fingerprint`.
"""

from __future__ import annotations

import ctypes
import hashlib
from typing import Any, Protocol

import torch
from torch import nn

__all__ = ["DeviceDigests", "Digests", "HostHashes", "digestible", "fingerprint",
           "fingerprints", "has_storage", "in_place_bytes", "sha1", "tensor_head", "value_parts"]


class _HasFingerprint(Protocol):
    fingerprint: Any


def has_storage(t: torch.Tensor) -> bool:
    """False for wrapper subclasses (their data lives in inner tensors)."""
    if type(t) is torch.Tensor or type(t) is nn.Parameter:
        return True
    try:
        t.untyped_storage().data_ptr()
    except (RuntimeError, NotImplementedError, TypeError):
        return False
    return True


_DTYPE_NAMES: dict[torch.dtype, str] = {}


def dtype_name(dtype: torch.dtype) -> str:
    """``float32`` for ``torch.float32`` (cached: ``str(dtype)`` is slow)."""
    name = _DTYPE_NAMES.get(dtype)
    if name is None:
        name = _DTYPE_NAMES[dtype] = str(dtype).removeprefix("torch.")
    return name


_HEADS: dict[tuple[torch.dtype, torch.Size], str] = {}


def tensor_head(t: torch.Tensor) -> str:
    """The fingerprint head of ``t``: dtype and shape, ``float32[3, 4]:`` (cached)."""
    key = (t.dtype, t.shape)
    head = _HEADS.get(key)
    if head is None:
        if len(_HEADS) >= 65_536:
            _HEADS.clear()
        head = _HEADS[key] = f"{dtype_name(t.dtype)}{list(t.shape)}:"
    return head


def digestible(t: torch.Tensor) -> bool:
    """Whether ``t`` has bytes to digest: strided, not ``meta``, with its own storage."""
    return t.layout is torch.strided and not t.is_meta and has_storage(t)


def in_place_bytes(t: torch.Tensor) -> memoryview | None:
    """The bytes of a contiguous CPU tensor, read where they lie (no copy, no tensor call
    beyond the address), or ``None`` when they cannot be read so (not on the CPU, not
    contiguous, a conjugate or negative view). ``t`` must stay alive while they are read."""
    if not t.is_cpu or not t.is_contiguous() or t.is_conj() or t.is_neg():
        return None
    nbytes = t.numel() * t.element_size()
    if nbytes == 0:
        return memoryview(b"")
    return memoryview((ctypes.c_ubyte * nbytes).from_address(t.data_ptr()))


def value_parts(t: torch.Tensor) -> str | tuple[str, torch.Tensor] | None:
    """``t``'s fingerprint head (``float32[3, 4]:``) and its values as a 1-D tensor.

    The values are a view where ``t`` is contiguous, with conjugate and negative bits
    resolved. ``None`` unless :func:`digestible`; the head alone for an empty tensor.
    """
    if not digestible(t):
        return None
    head = tensor_head(t)
    if t.numel() == 0:
        return head
    if t.is_conj() or t.is_neg():
        t = t.resolve_conj().resolve_neg()
    return head, t.reshape(-1)


def _host_bytes(flat: torch.Tensor) -> memoryview:
    """The bytes of a CPU tensor in row-major order (no copy when it is contiguous)."""
    return memoryview(flat.detach().contiguous().reshape(-1).view(torch.uint8).numpy())


def sha1(data: Any) -> str:
    """The hex SHA-1 of a buffer (a change detector, not a security measure)."""
    return hashlib.sha1(data, usedforsecurity=False).hexdigest()


def fingerprint(t: torch.Tensor) -> str | None:
    """A value fingerprint of ``t``'s bytes (shape and dtype included).

    On CPU a SHA-1 of the bytes (hardware-accelerated on most hosts; a change detector, not
    a security measure); on accelerators three exact integer sums of the bytes (plain,
    position-weighted mod 65521 and mod 65519), computed on the device in chunks, so no host
    copy and no float rounding. ``None`` on ``meta`` and without storage.
    """
    return fingerprints({"": t})[""]


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


_SMALL = 1 << 20  # tensors up to this many bytes are digested in batches
_BATCH = 1 << 24  # bytes per batch
_Key = tuple[torch.device, torch.dtype, torch.Size]  # tensors concatenated together


class HostHashes:
    """SHA-1 digests of many 1-D tensors' bytes, small ones hashed from a few shared buffers.

    :meth:`add` queues ``flat`` (1-D, any dtype and device, may be strided); :meth:`finish`
    sets ``slot.fingerprint = head + sha1(bytes of flat)``, exactly what hashing
    ``flat.contiguous()`` alone gives. Small tensors of one dtype and device are concatenated
    (one copy, and for a device one host transfer, per batch) and hashed slice by slice;
    a large CPU tensor is hashed at once, in place when contiguous.
    """

    def __init__(self) -> None:
        self.groups: dict[_Key, list[tuple[_HasFingerprint, str, torch.Tensor]]] = {}
        self.sizes: dict[_Key, int] = {}

    def add(self, slot: _HasFingerprint, head: str, flat: torch.Tensor) -> None:
        """Queue ``flat`` (1-D, or 2-D rows of one width; hashed in row-major order)."""
        nbytes = flat.numel() * flat.element_size()
        if nbytes > _SMALL and flat.device.type == "cpu":
            slot.fingerprint = head + sha1(_host_bytes(flat))
            return
        key = (flat.device, flat.dtype, flat.shape[1:])
        group = self.groups.get(key)
        if group is None:
            group = self.groups[key] = []
            self.sizes[key] = 0
        group.append((slot, head, flat))
        self.sizes[key] += nbytes
        if self.sizes[key] >= _BATCH:
            self._hash(key)

    def _hash(self, key: _Key) -> None:
        items = self.groups.pop(key, [])
        self.sizes.pop(key, None)
        if not items:
            return
        try:
            buffer = torch.cat([flat for _, _, flat in items])
        except (RuntimeError, TypeError, NotImplementedError):  # a dtype cat does not support
            for slot, head, flat in items:
                slot.fingerprint = head + sha1(_host_bytes(flat.cpu()))
            return
        data = _host_bytes(buffer.cpu())
        size, start = buffer.element_size(), 0
        for slot, head, flat in items:
            end = start + flat.numel() * size
            slot.fingerprint = head + sha1(data[start:end])
            start = end

    def finish(self) -> None:
        """Hash everything still queued."""
        for key in list(self.groups):
            self._hash(key)


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


class Digests:
    """:func:`fingerprint` of many tensors, batched; :meth:`finish` sets ``slot.fingerprint``."""

    def __init__(self) -> None:
        self.host = HostHashes()
        self.device = DeviceDigests()

    def add(self, slot: _HasFingerprint, t: torch.Tensor) -> None:
        """Queue ``t``'s fingerprint for ``slot`` (set now when it is read in place)."""
        if not digestible(t):
            slot.fingerprint = None
            return
        data = in_place_bytes(t)
        if data is not None:  # most CPU tensors: hashed where they lie
            slot.fingerprint = tensor_head(t) + (sha1(data) if len(data) else "")
            return
        parts = value_parts(t)
        if parts is None or isinstance(parts, str):
            slot.fingerprint = parts
            return
        head, flat = parts
        if flat.device.type == "cpu":
            self.host.add(slot, head, flat)
        else:
            self.device.add(slot, head, flat.contiguous().view(torch.uint8))

    def finish(self) -> None:
        """Compute everything queued (one host synchronization per device)."""
        self.host.finish()
        self.device.finish()


class _Slot:
    __slots__ = ("fingerprint",)

    def __init__(self) -> None:
        self.fingerprint: str | None = None


def fingerprints(tensors: dict[str, torch.Tensor]) -> dict[str, str | None]:
    """:func:`fingerprint` of many tensors, batched (see :class:`Digests`)."""
    digests = Digests()
    slots: dict[str, _Slot] = {}
    with torch.no_grad():
        for name, t in tensors.items():
            slot = slots[name] = _Slot()
            digests.add(slot, t)
        digests.finish()
    return {name: slot.fingerprint for name, slot in slots.items()}
