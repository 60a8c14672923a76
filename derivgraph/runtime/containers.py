"""Tuples as holders: derived tensors kept inside an immutable container the engine rebinds.

vLLM 0.33.0's LiLiCorr head stores ``self._factor_input_splits = (w_self, w_anchor, w_cross)``,
a new tuple of new tensors on every load. A spec declares each item: ``owner:
_factor_input_splits``, ``name: "0"`` (the item's index), kind ``attribute``. Nothing can be
bound into a tuple, so the plan keeps the startup tuple object for life:

* compile adopts the engine's tuple: each declared item must be a tensor the engine holds and
  equal to its formula (DG011 otherwise); its storage is the item's startup storage;
* the pass and :meth:`~derivgraph.runtime.plan.Plan.refill` write the startup tensors in place (a
  refill copies the engine's fresh items first); then :func:`restore_containers` puts the startup
  tuple back at its parent slot. Its items are the startup tensors, so nothing else is bound;
* a permissive re-allocation (``run(strict=False)``) rebuilds the tuple around the new storage.

The check at bind time (:func:`derivgraph.compiler.bind.container_problem`, rule
``DG043 container-holder``) refuses,
before anything is touched, a tuple that cannot be put back: one held in a list or another
tuple, under a property or in an ``nn.Module`` registry (no plain attribute or dict slot), a
tuple subclass other than a namedtuple, a name that is not an item index, a kind other than
``attribute``, or an item that is not a tensor.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from derivgraph.paths import MISSING, Slot, get_path, set_slot, step_into
from derivgraph.runtime.entry import Entry

__all__ = ["ContainerHolder", "collect_containers", "restore_containers"]


def _parent(path: str) -> tuple[str, str]:
    parent, _, key = path.rpartition(".")
    return parent, key


@dataclass
class ContainerHolder:
    """One tuple kept for life: where it lives and which of its items are derived tensors."""

    path: str  # from the model root
    startup: tuple[Any, ...]
    items: dict[int, Entry] = field(default_factory=dict)

    def rebuilt(self) -> tuple[Any, ...]:
        """The startup tuple, or a new one of its type around re-allocated items."""
        if all(self.startup[i] is e.storage for i, e in self.items.items()):
            return self.startup
        values = list(self.startup)
        for i, entry in self.items.items():
            values[i] = entry.storage
        cls = type(self.startup)
        return tuple(values) if cls is tuple else cls._make(values)  # type: ignore[attr-defined]


def collect_containers(entries: Iterable[Entry], model: Any) -> list[ContainerHolder]:
    """The tuples tuple items of ``entries`` live in (bound at compile: the engine's own)."""
    holders: dict[str, ContainerHolder] = {}
    for entry in entries:
        if entry.slot is not Slot.ELEMENT:
            continue
        path = entry.node.owner_path
        holder = holders.get(path)
        if holder is None:
            holder = holders[path] = ContainerHolder(path, get_path(model, path))
        holder.items[int(entry.node.decl.name)] = entry
    return list(holders.values())


def restore_containers(model: Any, holders: list[ContainerHolder]) -> int:
    """Put every startup tuple back at its parent slot; returns how many were put back.

    One identity check per tuple when nothing was rebuilt.
    """
    count = 0
    for holder in holders:
        parent_path, key = _parent(holder.path)
        parent = get_path(model, parent_path)
        if parent is MISSING or parent is None:
            continue  # the owner is gone: reported as a missing owner by the rebind
        want = holder.rebuilt()
        holder.startup = want
        if step_into(parent, key) is not want:
            set_slot(parent, key, want, Slot.ATTRIBUTE)
            count += 1
    return count
