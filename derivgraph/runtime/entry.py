"""Where a derived tensor lives: its node, its startup storage, and the slot it is held in."""

from __future__ import annotations

from typing import Any, NamedTuple

import torch

from derivgraph.addresses import address_of
from derivgraph.compiler.graph import DerivedNode
from derivgraph.paths import Slot

__all__ = ["Entry", "ProvenColumn", "address_of"]


class Entry:
    """A derived tensor bound to its owner, with the storage it keeps for life."""

    __slots__ = ("node", "storage", "slot", "adopted", "startup_ptr", "startup_data")

    def __init__(self, node: DerivedNode, storage: Any, slot: Slot | str, adopted: bool):
        self.node = node
        self.storage = storage
        self.slot = slot if type(slot) is Slot else Slot(slot)
        self.adopted = adopted
        self.startup_ptr = 0
        self.startup_data: Any = None  # a detached alias of the startup storage

    @property
    def id(self) -> str:
        return self.node.id

    def nbytes(self) -> int:
        s = self.storage
        return s.numel() * s.element_size() if isinstance(s, torch.Tensor) else 0


class ProvenColumn(NamedTuple):
    """A column :func:`~derivgraph.adoption_columns.allocated_rows` or
    :func:`~derivgraph.adoption_columns.alias_rows` took whole: table ``table``'s
    template node ``k`` (its id ``template``), the rows' ids, entries, extras and owners (as
    the reader read them) in row order. Its facts, for a reader of the same model with
    nothing written since: every row's node has the template node's declaration (so its kind
    and name), its entry was made here (not adopted, its slot ``slot``), the name is absent
    on every owner (:func:`~derivgraph.paths.absent_on_modules`, a one-hop name) and, for an
    alias column, no row's input is a derived tensor."""

    table: Any
    k: int
    template: str
    ids: list[str]
    entries: list[Entry]
    extras: list[Any]
    owners: list[Any]
    slot: Slot
