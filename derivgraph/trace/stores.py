"""Find what a post-load step stored: diff the object graph before and after it.

Both sides are census walks (:func:`derivgraph.audit.runtime.census.take_census`), so every hiding
place the runtime audit knows is seen: module parameters, buffers and attributes, nested
objects, frozen dataclasses, dict and list items. A :class:`Slot` is one place holding a
tensor (or a Python float) after the step that held something else (or nothing) before. Two
paths through the same holder object (``moe_quant_config._w1`` and
``fused_experts.quant_config._w1``) are one slot.
"""

from __future__ import annotations

import enum
import logging
import re
from dataclasses import dataclass
from typing import Any

import torch
from torch import nn

from derivgraph.audit.runtime.census import Census, take_census
from derivgraph.paths import MISSING, get_path

__all__ = ["Slot", "SlotKind", "built_outside", "shortest_path", "snapshot", "stored_slots",
           "spec_path"]

logger = logging.getLogger(__name__)


class SlotKind(enum.Enum):
    """How a slot holds its value; the spec kinds for a primary declaration."""

    PARAMETER = "parameter"
    BUFFER = "buffer"
    ATTRIBUTE = "attribute"
    SCALAR = "scalar"


@dataclass
class Slot:
    """One stored value: ``owner.name`` (paths from the model root, spec syntax)."""

    owner: str
    name: str
    kind: SlotKind
    value: Any
    persistent: bool = False
    unbindable: str = ""  # why no spec can name this slot (a tuple item, a closure cell...)

    @property
    def path(self) -> str:
        return f"{self.owner}.{self.name}" if self.owner else self.name


_ITEM = re.compile(r"\[(\d+)\]")
_KEY = re.compile(r"\['([A-Za-z_][A-Za-z0-9_]*)'\]")


def spec_path(census_path: str) -> str | None:
    """A census path in spec syntax (``a[0]`` -> ``a.0``), or ``None`` if a spec cannot name
    it (partials, closures, odd dict keys)."""
    path = _KEY.sub(r".\1", _ITEM.sub(r".\1", census_path))
    if any(piece in path for piece in (".partial.", ".closure.", ".defaults", ".kwdefaults",
                                       ".__func__", ".__self__", "[")):
        return None
    return path


def _properties(obj: Any) -> list[str]:
    out = []
    for cls in type(obj).__mro__:
        for key, value in vars(cls).items():
            if isinstance(value, property) and not key.startswith("_") and key not in out:
                out.append(key)
    return out


def shortest_path(model: Any, path: str) -> str:
    """``path`` with hops through an object replaced by a property of it that returns the
    same object further down (vLLM's ``moe_kernel.fused_experts`` for
    ``moe_kernel.impl.fused_experts``): the path the engine's own code reads."""
    parts = path.split(".")
    objs = [model]
    for part in parts[:-1]:
        objs.append(get_path(objs[-1], part))
        if objs[-1] is MISSING:
            return path
    i = 0
    out: list[str] = []
    while i < len(parts) - 1:
        obj = objs[i]
        jump = None
        if not isinstance(obj, nn.Module) and obj is not None and not isinstance(
            obj, (list, tuple, dict)
        ):
            for prop in _properties(obj):
                try:
                    value = getattr(obj, prop)
                except Exception:  # noqa: BLE001 - a property may raise anything; skip it
                    logger.debug("property %s of %s raised", prop, type(obj).__name__)
                    continue
                for j in range(len(objs) - 1, i + 1, -1):
                    if value is objs[j]:
                        jump = (prop, j)
                        break
                if jump:
                    break
        if jump:
            out.append(jump[0])
            i = jump[1]
        else:
            out.append(parts[i])
            i += 1
    return ".".join([*out, parts[-1]])


def snapshot(model: Any) -> Census:
    """The census a trace diffs against (tensors kept alive, no fingerprints)."""
    return take_census(model, fingerprints=False, floats=True)


def _slot_kind(owner: Any, name: str) -> tuple[SlotKind, bool]:
    if isinstance(owner, nn.Module):
        if name in owner._parameters:
            return SlotKind.PARAMETER, False
        if name in owner._buffers:
            return SlotKind.BUFFER, name not in owner._non_persistent_buffers_set
    return SlotKind.ATTRIBUTE, False


def _storage(t: torch.Tensor) -> int:
    try:
        return t.untyped_storage().data_ptr()
    except (RuntimeError, NotImplementedError):
        return 0


def stored_slots(model: Any, before: Census | None, after: Census,
                 written: set[int] | frozenset[int] = frozenset()) -> list[Slot]:
    """Every slot whose value the step stored (new, another object, or new storage), and
    every slot holding a tensor in ``written`` (ids the step wrote in place: a host copy
    refilled with ``fill_``)."""
    old = before.index() if before is not None else {}
    seen: set[tuple[int, str]] = set()
    slots: list[Slot] = []
    for entry in after.entries.values():
        for path in entry.paths():
            prev = old.get(path)
            value = entry.value
            if prev is not None and prev.value is value and (
                not isinstance(value, torch.Tensor) or prev.identity == entry.identity
            ) and id(value) not in written:
                continue
            if prev is not None and entry.identity is None and prev.value == value:
                continue  # a float set to the same value: indistinguishable, not stored
            sp = spec_path(path)
            if sp is not None:
                sp = shortest_path(model, sp)
            owner_path, _, name = (sp or path).rpartition(".")
            owner = get_path(model, owner_path) if sp is not None else MISSING
            key = (id(owner), name)
            if sp is not None and owner is not MISSING:
                if key in seen:
                    continue
                seen.add(key)
            if entry.identity is None:
                kind, persistent = SlotKind.SCALAR, False
            elif owner is MISSING:
                kind, persistent = SlotKind.ATTRIBUTE, False
            else:
                kind, persistent = _slot_kind(owner, name)
            unbindable = ""
            if sp is None:
                unbindable = f"{path}: held where no spec can name it (a partial, closure or " \
                             "default argument); keep it at a named owner"
            elif owner is MISSING:
                unbindable = f"{path}: its owner is not reachable by attribute path"
            elif not name.isidentifier():
                unbindable = f"{path}: a list or tuple item has no name a spec can declare; " \
                             "hold the tensor at a named attribute"
            slots.append(Slot(owner_path, name, kind, value, persistent, unbindable))
    return slots


def built_outside(before: Census | None, stored: set[str], registered: set[int]) -> list[str]:
    """A caveat naming tensors that existed before the traced step outside every parameter
    and buffer (``registered``: their ids) and that the step did not store again (``stored``
    paths): built by ``__init__`` or ``load_weights``, where the trace did not look. Whether
    they derive from weights, the trace cannot tell."""
    if before is None:
        return []
    outside = sorted(path for path, e in before.tensors().items()
                     if e.place not in ("parameter", "buffer") and path not in stored
                     and id(e.value) not in registered)
    if not outside:
        return []
    shown = ", ".join(outside[:6]) + (" ..." if len(outside) > 6 else "")
    return [f"built outside the traced step: {len(outside)} tensor(s) held outside the "
            f"parameters and buffers existed before it ({shown}); if they derive from weights "
            "(e.g. built in load_weights), trace the step that builds them"]
