"""Stale-in-place: tensors a reload left where they were, with the value they had before it.

An address check cannot see them: the object and its storage are the startup ones, only the
value is old (vLLM 0.33 never refills a non-persistent buffer; a holder built once and never
rebuilt keeps its first value). Without a cold start of the new weights nobody knows what the
value *should* be, so this module uses a documented heuristic, the only one cheap enough to
run on every reload:

    a tensor is **unrefreshed** when its value digest is unchanged by a reload in which every
    loaded tensor of the module holding it changed.

Where:

* *loaded tensors* are the parameters and persistent buffers of the model (what the engine
  loads or copies back); they are never themselves suspects, nor is any alias of one;
* the *module holding* a tensor is the deepest registered module its census path starts with
  (``layers.3.proj`` for ``layers.3.proj._scale_inv`` and for
  ``layers.3.proj.quant_method.kernel.alpha``); "every loaded tensor of it changed" counts its
  whole subtree and needs at least one;
* *changed* is judged on a sampled digest of each loaded tensor (at most ``SAMPLE_BYTES``
  bytes, evenly spaced blocks of ``SAMPLE_BLOCK`` bytes): a weight whose sample did not
  change counts as unchanged, so sampling can only make the rule stay silent, never raise
  a false alarm;
* tensors that cannot be weight-derived values are skipped: integer and boolean tensors
  (strides, index maps, expert maps: shape-derived in vLLM 0.33; repacked integer weights are
  parameters), constant fills (``full``/``zeros``/``ones``: every element equal, more than
  one element), and tensors without storage.

What it cannot see: a tensor derived from weights of *another* module only (its holder's
weights may not all change), a reload that changes only some weights of the holder (a sparse
or kernel-format update), and a tensor that changes but to the wrong value. A cold start
(``audit runtime --cold``) sees all of these.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch
from torch import nn

from derivgraph.audit.runtime.fingerprint import (
    HostHashes,
    digestible,
    has_storage,
    in_place_bytes,
    sha1,
    tensor_head,
    value_parts,
)

__all__ = [
    "SAMPLE_BLOCK", "SAMPLE_BYTES", "Unrefreshed", "holder_module", "loaded_tensors",
    "module_changes", "sampled_digest", "skip_reason", "unrefreshed",
]

logger = logging.getLogger(__name__)

#: Bytes of a loaded tensor the "did it change" digest reads (evenly spaced blocks).
SAMPLE_BYTES = 1 << 14
#: The sample is read in blocks of this many bytes (a cache line: reading one element in
#: every line would cost as much memory traffic as reading the whole tensor).
SAMPLE_BLOCK = 64


def loaded_tensors(model: Any) -> dict[str, torch.Tensor]:
    """Name -> tensor of every parameter and persistent buffer (what an engine loads)."""
    if not isinstance(model, nn.Module):
        return {}
    out: dict[str, torch.Tensor] = dict(model.named_parameters(remove_duplicate=False))
    for mod_name, module in model.named_modules(remove_duplicate=False):
        skip = module._non_persistent_buffers_set
        for name, buf in module._buffers.items():
            if buf is not None and name not in skip:
                out[f"{mod_name}.{name}" if mod_name else name] = buf
    return out


def _sample(t: torch.Tensor) -> str | tuple[str, torch.Tensor] | None:
    """The head and the values :func:`sampled_digest` hashes (see there)."""
    parts = value_parts(t)
    if parts is None or isinstance(parts, str):
        return parts
    head, flat = parts
    size = flat.element_size()
    nbytes = flat.numel() * size
    if nbytes <= SAMPLE_BYTES:
        return head, flat
    width = max(1, SAMPLE_BLOCK // size)  # elements per block
    blocks = flat.numel() // width
    step = -(-(blocks * width * size) // SAMPLE_BYTES)
    sample = flat[:blocks * width].view(blocks, width)[::step]
    return f"~{sample.numel()}:", sample


def sampled_digest(t: torch.Tensor) -> str | None:
    """A change detector reading at most :data:`SAMPLE_BYTES` bytes of ``t`` (exact if smaller).

    On accelerators the sample is copied to the host (a few kB per tensor).
    """
    return sampled_digests({"": t})[""]


class _Slot:
    __slots__ = ("fingerprint",)

    def __init__(self) -> None:
        self.fingerprint: str | None = None


def _sample_in_place(t: torch.Tensor, data: memoryview) -> str:
    """:func:`sampled_digest` of a tensor whose bytes are read in place (the same blocks)."""
    nbytes = len(data)
    if nbytes <= SAMPLE_BYTES:
        return tensor_head(t) + (sha1(data) if nbytes else "")
    blocks = nbytes // SAMPLE_BLOCK
    step = -(-(blocks * SAMPLE_BLOCK) // SAMPLE_BYTES)
    rows = np.frombuffer(data, np.uint8, blocks * SAMPLE_BLOCK).reshape(blocks, SAMPLE_BLOCK)
    sample = np.ascontiguousarray(rows[::step])
    return f"~{sample.size // t.element_size()}:" + sha1(sample)


def sampled_digests(tensors: Mapping[str, torch.Tensor]) -> dict[str, str | None]:
    """:func:`sampled_digest` of each tensor, by name; contiguous CPU tensors are read in place,
    the others' samples hashed in batches (one host transfer per batch on accelerators)."""
    hashes = HostHashes()
    slots: dict[str, _Slot] = {}
    with torch.no_grad():
        for name, t in tensors.items():
            slot = slots[name] = _Slot()
            data = in_place_bytes(t) if digestible(t) else None
            if data is not None:
                slot.fingerprint = _sample_in_place(t, data)
                continue
            parts = _sample(t)
            if parts is None or isinstance(parts, str):
                slot.fingerprint = parts
            else:
                hashes.add(slot, *parts)
        hashes.finish()
    return {name: slot.fingerprint for name, slot in slots.items()}


def module_changes(before: Mapping[str, str | None],
                   after: Mapping[str, str | None]) -> dict[str, tuple[int, int]]:
    """Module path -> (loaded tensors in its subtree, how many changed), the root as ``""``.

    A name present on one side only counts as changed; a tensor without a digest as unchanged.
    """
    counts: dict[str, list[int]] = {}
    for name in set(before) | set(after):
        b, a = before.get(name), after.get(name)
        changed = (b is None) != (a is None) or (b is not None and b != a)
        parts = name.split(".")
        for i in range(len(parts)):  # "" and every module prefix (the last part is the tensor)
            key = ".".join(parts[:i])
            c = counts.setdefault(key, [0, 0])
            c[0] += 1
            c[1] += changed
    return {k: (v[0], v[1]) for k, v in counts.items()}


def holder_module(path: str, modules: frozenset[str] | set[str]) -> str:
    """The deepest module path ``path`` starts with (``""``: the root)."""
    head = path
    while head:
        cut = max(head.rfind("."), head.rfind("["))
        head = head[:cut] if cut > 0 else ""
        if head in modules:
            return head
    return ""


def skip_reason(t: torch.Tensor) -> str | None:
    """Why ``t`` cannot be a weight-derived value the rule judges, or ``None``."""
    if t.device.type == "meta" or not has_storage(t) or t.layout != torch.strided:
        return "no storage"
    if not (t.is_floating_point() or t.is_complex()):
        return "integer or boolean (shape-derived in vLLM)"
    if t.numel() > 1:
        flat = t.detach().reshape(-1)
        if bool((flat == flat[0]).all()):
            return "constant fill"
    return None


@dataclass(frozen=True)
class Unrefreshed:
    """One tensor whose value a reload left unchanged although its module's weights changed."""

    path: str
    module: str
    loaded: int  # loaded tensors in the module's subtree, all changed

    def reason(self) -> str:
        where = self.module or "the model"
        return (f"value unchanged by a reload that changed all {self.loaded} loaded tensor(s) "
                f"of {where}: kept in place but not refreshed (stale in place); declare it in a "
                "spec or rebuild it in the post-load step")


@dataclass
class _Counts:
    modules: Mapping[str, tuple[int, int]]
    names: frozenset[str]
    memo: dict[str, tuple[int, int] | None] = field(default_factory=dict)

    def all_changed(self, module: str) -> tuple[int, int] | None:
        if module not in self.memo:
            c = self.modules.get(module)
            self.memo[module] = c if c is not None and c[0] > 0 and c[0] == c[1] else None
        return self.memo[module]


def unrefreshed(unchanged: Iterable[tuple[str, torch.Tensor]], modules: Iterable[str],
                changes: Mapping[str, tuple[int, int]]) -> Iterator[Unrefreshed]:
    """Apply the rule to tensors whose digest did not change (path, tensor now).

    ``modules``: every registered module path; ``changes``: :func:`module_changes`.
    """
    counts = _Counts(changes, frozenset(modules))
    for path, t in unchanged:
        module = holder_module(path, counts.names)
        c = counts.all_changed(module)
        if c is None or skip_reason(t) is not None:
            continue
        yield Unrefreshed(path, module, c[0])
