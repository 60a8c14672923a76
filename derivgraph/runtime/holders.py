"""How holders are re-pointed: identity checks over owner paths, and the rebind itself.

A *holder* is the object that owns an attribute (a module, a quant method, a kernel): the
engine may rebuild it on reload, and the plan puts the startup object back at its slot.
:class:`Hops` checks a set of paths with one C-level ``all(map(is_, ...))`` per run;
:class:`Holders` keeps those checks for the plan's sources and derived tensors and re-binds
what changed.
"""

from __future__ import annotations

import operator
from collections.abc import Iterable, Mapping
from typing import Any

import torch

from derivgraph.compiler.graph import DerivedGraph
from derivgraph.errors import SourceChanged
from derivgraph.paths import MISSING, Slot, get_path, holder_dict, set_slot, slot_of, step_into
from derivgraph.runtime.entry import Entry, address_of
from derivgraph.spec.kinds import TensorKind

__all__ = ["Holders", "Hops"]

_is = operator.is_
_data_ptr = torch.Tensor.data_ptr


class Hops:
    """Identity checks for a set of paths: one C-level ``all(map(is_, ...))`` per run."""

    def __init__(self, root: Any, paths: Iterable[str]):
        dicts, keys, expected = [], [], []
        self.slow: list[tuple[Any, str, Any]] = []
        seen: dict[str, Any] = {"": root}
        for path in paths:
            parts = path.split(".") if path else []
            for i in range(len(parts)):
                prefix = ".".join(parts[: i + 1])
                if prefix in seen:
                    continue
                parent = seen[".".join(parts[:i])]
                if parent is MISSING or parent is None:
                    seen[prefix] = MISSING
                    continue
                child = step_into(parent, parts[i])
                seen[prefix] = child
                where = holder_dict(parent, parts[i])
                if where is None:
                    self.slow.append((parent, parts[i], child))
                else:
                    dicts.append(where[0])
                    keys.append(where[1])
                    expected.append(child)
        self.objects = seen
        self._dicts, self._keys, self._expected = dicts, keys, expected

    def intact(self) -> bool:
        if not all(map(_is, map(dict.get, self._dicts, self._keys), self._expected)):
            return False
        return all(step_into(p, k) is c for p, k, c in self.slow)


class Holders:
    """The plan's holder and source identity checks, and the rebind of derived tensors."""

    def __init__(self, model: Any, entries: Mapping[str, Entry]):
        self.model = model
        self.entries = entries
        self.hops: Hops | None = None
        self._checks: tuple[list[Any], list[str], list[Any]] = ([], [], [])
        self._checked: list[Entry] = []
        self._sources: list[tuple[str, Any, torch.Tensor, int]] = []
        self._source_checks: tuple[list[Any], list[str], list[Any], list[int]] | None = None

    def walk(self) -> Hops:
        """Walk every owner path once (sources' and derived tensors')."""
        self.hops = Hops(self.model, [s.rpartition(".")[0] for s, *_ in self._sources]
                         + [e.node.owner_path for e in self.entries.values()])
        return self.hops

    def bind(self, sources: Mapping[str, torch.Tensor]) -> None:
        """Record where each source is held, walk the owners and set up the identity checks."""
        self._sources = [(src, None, tensor, address_of(tensor)) for src, tensor in
                         sources.items()]
        self._source_checks = None
        objs = self.walk().objects
        rows = []
        for src, _where, tensor, ptr in self._sources:
            owner_path, _, name = src.rpartition(".")
            owner = objs.get(owner_path, MISSING) if owner_path else self.model
            rows.append((src, holder_dict(owner, name) if owner is not MISSING else None,
                         tensor, ptr))
        self._sources = rows
        self.refresh()

    def refresh(self) -> None:
        """Re-read each derived tensor's holder slot (after a walk)."""
        self._checked = [e for e in self.entries.values()  # tuple items: the tuple's hop
                         if e.node.kind is not TensorKind.SCALAR and e.slot is not Slot.ELEMENT]
        dicts, keys = [], []
        for entry in self._checked:
            d, k = self._where(entry)
            dicts.append(d)
            keys.append(k)
        self._checks = (dicts, keys, [e.storage for e in self._checked])

    def _where(self, entry: Entry) -> tuple[Any, str]:
        objs = self.hops.objects if self.hops else {}
        path = entry.node.owner_path
        owner = objs.get(path, MISSING) if path else self.model
        where = holder_dict(owner, entry.node.decl.name) \
            if owner is not MISSING and owner is not None else None
        return where if where is not None else ({}, entry.node.decl.name)

    # ---- sources -----------------------------------------------------------------------------
    def sources_intact(self) -> bool:
        """One C-level identity sweep and one address sweep over every source."""
        checks = self._source_checks
        if checks is None:
            rows = self._sources
            if any(where is None for _s, where, _t, _p in rows):
                return False
            checks = self._source_checks = ([w[0] for _s, w, _t, _p in rows],
                                            [w[1] for _s, w, _t, _p in rows],
                                            [t for _s, _w, t, _p in rows],
                                            [p for _s, _w, _t, p in rows])
        dicts, keys, tensors, ptrs = checks
        return all(map(_is, map(dict.get, dicts, keys), tensors)) and \
            list(map(_data_ptr, tensors)) == ptrs

    def changed_sources(self, graph: DerivedGraph) -> tuple[list[str], list[str]]:
        """(sources whose shape or dtype changed, sources that only moved)."""
        changed, moved = [], []
        for src, _where, tensor, ptr in self._sources:
            current = get_path(self.model, src)
            if current is MISSING or not isinstance(current, torch.Tensor):
                raise SourceChanged("sources are gone from the model", [src])
            node = graph.nodes[src]
            if tuple(current.shape) != node.shape or current.dtype != node.dtype:
                changed.append(src)
            elif current is not tensor or current.data_ptr() != ptr:
                moved.append(src)
        return changed, moved

    def moved(self, source_ptrs: Mapping[str, tuple[int, int]]) -> list[str]:
        """Derived tensors and sources whose holder now has another object or address."""
        moved = []
        for key, entry in self.entries.items():
            if entry.node.kind is TensorKind.SCALAR:
                continue
            current = get_path(self.model, key)
            if current is not entry.storage or address_of(current) != entry.startup_ptr:
                moved.append(key)
        for path, (obj_id, ptr) in source_ptrs.items():
            current = get_path(self.model, path)
            if id(current) != obj_id or address_of(current) != ptr:
                moved.append(path)
        return moved

    # ---- rebinding ---------------------------------------------------------------------------
    def rebind(self, report: Any = None) -> int:
        """Point every holder back at the startup object; returns how many were re-bound."""
        if self.hops is not None and self.hops.intact():
            dicts, keys, expected = self._checks
            oks = list(map(_is, map(dict.get, dicts, keys), expected))
            if all(oks):
                return 0
            bad = [i for i, ok in enumerate(oks) if not ok]
            objs = self.hops.objects
            count = self.rebind_entries([self._checked[i] for i in bad], report, objs)
            for i in bad:
                dicts[i], keys[i] = self._where(self._checked[i])
            return count + self.rebind_entries(
                [e for e in self.entries.values() if e.node.kind is TensorKind.SCALAR], report,
                objs)
        count = self.rebind_entries(self.entries.values(), report, self.walk().objects)
        self.refresh()
        return count

    def rebind_entries(self, entries: Iterable[Entry], report: Any = None,
                       known: Mapping[str, Any] | None = None) -> int:
        """Put ``entries`` back at their holders; returns how many were re-bound.

        ``known``: owners by path from a fresh walk; other owners are looked up.
        """
        count = 0
        owners: dict[str, Any] = dict(known) if known else {}
        owners[""] = self.model
        for entry in entries:
            path = entry.node.owner_path
            owner = owners[path] if path in owners else owners.setdefault(
                path, get_path(self.model, path))
            if owner is MISSING or owner is None:
                if report is not None:
                    report.missing_owners.append(entry.id)
                continue
            name = entry.node.decl.name
            current = get_path(owner, name)
            if entry.node.kind is TensorKind.SCALAR:
                if current != entry.storage:
                    set_slot(owner, name, entry.storage, Slot.ATTRIBUTE)
                    count += 1
                continue
            if current is entry.storage and slot_of(owner, name) == entry.slot:
                continue
            if entry.slot is Slot.ELEMENT:  # the startup tuple was not put back: its parent
                if report is not None:      # is gone (restore_containers)
                    report.missing_owners.append(entry.id)
                continue
            set_slot(owner, name, entry.storage, entry.slot, entry.node.decl.persistent)
            count += 1
        return count
