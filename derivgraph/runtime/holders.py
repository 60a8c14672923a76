"""How holders are re-pointed: identity checks over owner paths, and the rebind itself.

A *holder* is the object that owns an attribute (a module, a quant method, a kernel): the
engine may rebuild it on reload, and the plan puts the startup object back at its slot.
:class:`Holders` keeps precompiled accessors (:mod:`derivgraph.runtime.accessors`) for the
plan's owner paths, sources and derived tensors: checks are C-level sweeps, a holder the engine
rebuilt is re-bound by one dict store, an owner the engine rebuilt is walked again alone.
What the accessors cannot prove takes the per-entry path (:meth:`Holders.rebind_entries`).
"""

from __future__ import annotations

import operator
from collections import deque
from collections.abc import Callable, Iterable, Mapping, Sequence
from itertools import compress, islice, repeat
from typing import Any, NamedTuple

import torch

from derivgraph.addresses import AtAddresses, data_ptrs
from derivgraph.compiler.graph import DerivedGraph
from derivgraph.compiler.owners import path_prefixes
from derivgraph.errors import SourceChanged
from derivgraph.paths import MISSING, Slot, get_path, set_slot, slot_of
from derivgraph.runtime.accessors import (
    NO_DICT,
    HeldColumn,
    HolderTable,
    HopTable,
    PathReads,
    column_read,
    column_rows,
    column_spans,
    holder_dicts,
    holder_of,
    holders_of,
    not_taken,
)
from derivgraph.runtime.entry import Entry, EntryTable, HeldEntries, address_of, entry_list
from derivgraph.runtime.source_ptrs import recorded_same
from derivgraph.runtime.watch import ItemWatch, watch_items
from derivgraph.spec.kinds import TensorKind

__all__ = ["Holders", "HopTable", "JOINT_MAX"]

#: up to how many startup tensors the sources' address check is joined with theirs
#: (:meth:`Holders._at_addresses`): the joint check saves one gather's fixed cost per run, which
#: only a small plan notices, while building it reads every startup tensor once more
JOINT_MAX = 4096

_is = operator.is_
_kind, _slot = operator.attrgetter("node.kind"), operator.attrgetter("slot")
_owner_path, _id = operator.attrgetter("owner_path"), operator.attrgetter("id")
_first, _second, _last = operator.itemgetter(0), operator.itemgetter(1), operator.itemgetter(2)
_storage = operator.attrgetter("storage")


class BoundSources(NamedTuple):
    """The bound sources as columns (:meth:`Holders.bind`), one row per source in the order
    bound: its path, holder dict (None where the source is held outside a dict: the source
    check is then False) and key in it, its tensor and its bound pointer. No per-source
    record is kept (the holder dicts' ``(dict, key)`` pairs die with the compile's reads)."""

    paths: list[str]
    dicts: list[Any]
    keys: list[str]
    tensors: list[torch.Tensor]
    ptrs: list[int]

    def rows(self) -> list[tuple[str, tuple[Any, str] | None, torch.Tensor, int]]:
        """Each source's ``(path, (holder dict, key) or None, tensor, pointer)``, made on
        request (for reports and tests; never kept)."""
        where = [None if d is None else (d, k) for d, k in zip(self.dicts, self.keys)]
        return list(zip(self.paths, where, self.tensors, self.ptrs))

    def outside_dicts(self) -> bool:
        """Whether some source is held outside a dict (its holder dict None)."""
        return not all(map(operator.is_not, self.dicts, repeat(None)))


_NO_SOURCES = BoundSources([], [], [], [], [])


def _found_rows(entries: Sequence[Entry], columns: list[HeldColumn],
                table: EntryTable | None = None) -> tuple[list[slice | None], bytearray]:
    """Where each of ``columns``' rows lie in ``entries`` (:func:`column_rows`, a column's
    rows taken by no earlier column; None: not found) and the positions so taken (1).
    ``table``: the entry table whose entries (``by_id``'s values, in order) ``entries`` are:
    a column naming its entry column, whose rows are that column's very list, is at the
    rows the table found it at (:attr:`~derivgraph.runtime.entry.EntryTable.rows`), not
    searched again."""
    taken = bytearray(len(entries))
    found: list[slice | None] = []
    known = {} if table is None or len(table) != len(entries) else \
        {id(column): span for span, column in table.rows}
    for _name, rows, owners, *record in columns:
        span = known.get(id(record[0])) if record else None
        if span is None or record[0].entries is not rows or len(owners) != len(rows) \
                or 1 in taken[span]:
            span = column_rows(entries, rows, owners, taken)
        found.append(span)
        if span is not None:
            taken[span] = b"\x01" * len(rows)
    return found, taken


class Holders:
    """The plan's holder and source identity checks, and the rebind of derived tensors."""

    def __init__(self, model: Any, entries: Mapping[str, Entry],
                 table: EntryTable | None = None):
        self.model = model
        self.entries = entries
        # the table whose ``by_id`` ``entries`` is (its columns' rows among them), if any
        self._table = table if table is not None and table.by_id is entries else None
        self.hops: HopTable | None = None
        self.table = HolderTable([], self._where)
        self._scalars: list[Entry] = []
        self._sources: BoundSources = _NO_SOURCES
        self._source_checks: tuple[list[Any], list[str], AtAddresses] | None = None
        self._source_watch: ItemWatch | None = None  # tags of the sources' holder dicts
        # False once watch_items refused the sources' dicts (too few, no tags): they are fixed
        # until the next bind, so it would refuse again; the identity sweep asks no more
        self._source_watchable = True
        self._sources_checked: Any = None  # the run (report) whose source check passed
        # every prefix of the sources' owner paths (those paths kept; made when first asked)
        self._source_owners: list[str] = []
        self._source_hops: frozenset[str] | None = frozenset()
        self._proven: tuple[Mapping[str, tuple[int, int]], int, frozenset[str], list[str]] \
            | None = None
        self._read: tuple[Any, HolderTable, list[Any], bool] | None = None  # see note_read
        # the run (report) whose rebind proved every holder of the table it names (see moved)
        self._rebound: tuple[Any, HolderTable] | None = None
        self._outside: tuple[HolderTable, int, list[str]] | None = None
        self._scalar_reads: tuple[list[dict[Any, Any]], list[str]] | None = None
        # the run whose source check proved the owners current (its rebind skips the hop sweep)
        self._owners_checked: tuple[Any, HopTable] | None = None
        self._sources_stale = False  # an owner on a source's path was rebuilt: bind() again
        #: the plan's startup tensors' address check (``BoundTensors.startup_addresses``),
        #: joined to the sources' own so that one check proves both (:meth:`_at_addresses`)
        self.startup: Callable[[], AtAddresses] | None = None
        # (the sources' check, the startup check, their joint check; None: not joined)
        self._joint: tuple[AtAddresses, AtAddresses, AtAddresses | None] | None = None
        #: the run (report) whose source check also proved every startup tensor at its
        #: startup address (by the joint check); None: not proven by a source check
        self.startup_checked: Any = None
        #: the run (report) whose :meth:`moved` proved its ``after`` tensors too; None: not
        #: proven
        self.after_checked: Any = None
        # (the holder table, the ``after`` check, their joint check; None: not joined)
        self._after_joint: tuple[HolderTable, AtAddresses, AtAddresses | None] | None = None

    def walk(self, source_owners: list[str] | None = None,
             entry_paths: list[str] | None = None) -> HopTable:
        """Walk every owner path once (sources' and derived tensors'; ``source_owners``: the
        sources' owner paths, else read from the bound sources; ``entry_paths``: every
        entry's owner path in the entries' order, where the caller read them)."""
        if source_owners is None:
            source_owners = [s.rpartition(".")[0] for s in self._sources.paths]
        if entry_paths is None:
            entry_paths = list(map(_owner_path, self.entries.values()))
        self.hops = HopTable(self.model, source_owners + entry_paths)
        return self.hops

    def bind(self, sources: Mapping[str, torch.Tensor], columns: Iterable[HeldColumn] = (),
             recorded: Mapping[str, tuple[int, int]] | None = None,
             reads: PathReads | None = None) -> None:
        """Record where each source is held, walk the owners and set up the identity checks.

        The sources are read a column at a time (:func:`holder_dicts`: one sweep per source
        name over its owners). ``columns``: entry columns proved held in their owners'
        ``__dict__`` only (:func:`holders_of`), taken where the walk finds their owners.
        ``recorded``: path -> (object id, :func:`~derivgraph.addresses.address_of`) of objects
        the caller still holds, nothing re-pointed since; its addresses are taken where it
        names every source's very object (:func:`recorded_ptrs`), else they are read.
        ``reads``: what the caller read on the way to the sources, nothing written to the model
        since (:func:`~derivgraph.runtime.accessors.read_paths`, its paths starting with these
        in their order): the holder dicts are taken from it where the walk finds every
        source's owner to be the very object it read (one identity sweep), else read; with
        ``recorded``, the addresses are its ``ptrs`` (the same record's, in its order) where
        every source is the very object it read (one identity sweep), else as above."""
        paths, tensors = list(sources), list(sources.values())
        n = len(paths)
        if reads is not None and _head(reads.paths, n) != paths:
            reads = None
        if reads is None:
            split = list(map(str.rpartition, paths, repeat(".")))
            owner_paths, names = list(map(_first, split)), list(map(_last, split))
        else:
            # the caller's read lists themselves where they are exactly these sources' (the
            # startup record's: ``Plan.source_ptrs`` holds the same paths; none is written)
            paths = _head(reads.paths, n)
            owner_paths, names = _head(reads.owner_paths, n), _head(reads.names, n)
        ptrs = _read_ptrs(reads, tensors) if recorded else None
        if ptrs is not None:  # ``reads``' objects are these very tensors, row by row
            tensors = _head(reads.objects, n)
        if ptrs is None and recorded:
            ptrs = recorded_ptrs(paths, tensors, recorded)
        if ptrs is None:
            ptrs = data_ptrs(tensors)
        self._source_checks = self._source_watch = None
        self._source_watchable = True
        entries, columns = entry_list(self.entries), list(columns)
        found, taken = _found_rows(entries, columns, self._table)
        # the walk's, and refresh's: a column's rows' paths are its own (adoption's reading)
        entry_paths = column_read(entries, _owner_path, [
            (rows, column.paths) for rows, column in column_spans(columns, found, entries)
            if column.paths is not None and len(column.paths) == len(column.ids)])
        objs = self.walk(owner_paths, entry_paths).objects
        owners = list(map(objs.get, owner_paths, repeat(MISSING)))  # objs[""] is the model
        # holder_dicts is a function of the owners' registries and dicts: the same objects,
        # nothing written since, the same answer
        where = _head(reads.where, n) if reads is not None and all(map(_is, owners, reads.owners)) \
            else holder_dicts(owners, names)
        # each source's holder dict (None: held outside a dict), its key the source's name
        self._sources = bound = BoundSources(paths, where, names, tensors, ptrs)
        if not bound.outside_dicts():  # the source check's columns, as sources_intact makes
            at = AtAddresses(tensors, ptrs)
            if reads is not None:  # the words the caller's addresses were computed from
                at.offer(reads.words)
            self._source_checks = (where, names, at)
        self._source_owners, self._source_hops = owner_paths, None  # see source_hops
        self._proven = None
        self._sources_stale = False
        self.refresh(columns, entry_paths, (entries, found, taken))

    def refresh(self, columns: Iterable[HeldColumn] = (),
                entry_paths: list[str] | None = None,
                rows: tuple[list[Entry], list[slice | None], bytearray] | None = None) -> None:
        """Re-read each derived tensor's holder slot (after a walk; ``columns``: as
        :meth:`bind`'s). Derived scalars and tuple items are left out of the table (a tuple
        item: the tuple's hop): each kind and slot is read in one sweep, but a column's rows
        (:func:`column_rows`: attribute slots of a tensor kind) are kept unread, and where a
        column names its entry column, the table takes that column's ids and storages
        (:func:`~derivgraph.runtime.accessors.column_spans`).
        ``entry_paths``: every entry's owner path in the entries' order, as the walk read
        them (nothing written since), else each is read where it is needed. ``rows``: the
        entries (in order), and ``columns``' rows found in them as :func:`_found_rows` found
        them (the caller's, nothing written since), else found here."""
        columns = list(columns)
        if rows is None:
            entries = entry_list(self.entries)
            found, taken = _found_rows(entries, columns, self._table)
        else:
            entries, found, taken = rows
        rest = not_taken(taken)  # None: every entry read
        read = entries if rest is None else list(map(entries.__getitem__, rest))
        scalar = list(map(_is, map(_kind, read), repeat(TensorKind.SCALAR)))  # one sweep
        element = map(_is, map(_slot, read), repeat(Slot.ELEMENT))
        keep = list(map(operator.not_, map(operator.or_, scalar, element)))
        if rest is not None:
            deque(map(operator.setitem, repeat(taken), rest, keep), 0)
            keep = taken  # the column rows, and the rest's kept ones
        every = 0 not in keep  # nothing left out: ``held`` has ``entries``' items, the rows found
        # (every entry of a HeldRows: its positions, an entry made where read)
        held = entries if every and type(entries) is HeldEntries else list(compress(entries, keep))
        self.table = HolderTable(held, self._where, holders_of(
            self.hops.objects if self.hops else {}, self.model, held, columns,
            found if every else None, entry_paths if every else None),
            column_spans(columns, found, held) if every else ())
        self._scalars = list(compress(read, scalar))
        self._scalar_reads = None

    def _scalars_current(self) -> bool:
        """Every derived scalar's holder holds a number equal to ours (one C-level sweep, the
        holders resolved once per owner walk); False when any holder is outside a dict."""
        reads = self._scalar_reads
        if reads is None:
            where = [self._where(e) for e in self._scalars]
            reads = self._scalar_reads = ([d for _o, d, _k in where], [k for *_, k in where]) \
                if all(d is not NO_DICT for _o, d, _k in where) else ([], [])
        if len(reads[0]) != len(self._scalars):
            return False
        return all(map(operator.eq, map(dict.get, *reads), map(_storage, self._scalars)))

    def _where(self, entry: Entry) -> tuple[Any, dict[Any, Any], str]:
        return holder_of(self.hops.objects if self.hops else {}, self.model, entry)

    def source_hops(self) -> frozenset[str]:
        """Every prefix of the bound sources' owner paths (:func:`path_prefixes`), made from
        the paths :meth:`bind` kept when first asked (a walk under rebuilt owners), then
        kept until the next bind."""
        hops = self._source_hops
        if hops is None:
            hops = self._source_hops = path_prefixes(self._source_owners)  # each owner's once
        return hops

    def owners_current(self) -> bool:
        """Bring the owner walk up to date, walking again only under rebuilt owners.

        False when an owner on the way to a source was rebuilt (the caller walks everything).
        """
        if self.hops is None:
            return False
        walked = self.hops.refresh()
        if not walked:
            return True
        hops = self.source_hops()
        if any(p in hops for p in walked):
            return False
        self.table.refresh(self.table.under(walked), self._where)
        self._scalar_reads = None
        return True

    # ---- sources -----------------------------------------------------------------------------
    def sources_intact(self, report: Any = None) -> bool:
        """Every owner on the way to a source is the object the sources were bound under (the
        hop sweep, which also brings the holder accessors up to date), then one C-level
        identity sweep and one address check over every source
        (:class:`~derivgraph.addresses.AtAddresses`).

        An owner rebuilt on a source's path makes this False until :meth:`bind` runs again: the
        bound source would be the old owner's tensor. ``report``: this run's, whose
        :meth:`rebind` then reuses the hop sweep.
        """
        self._owners_checked = self._sources_checked = self.startup_checked = None
        if self._sources_stale:
            return False
        if self.hops is not None:
            if not self.owners_current():
                self._sources_stale = True
                return False
            if report is not None:
                self._owners_checked = (report, self.hops)
        checks = self._source_checks
        if checks is None:
            sources = self._sources  # the bound columns
            if sources.outside_dicts():  # a source held outside a dict
                return False
            checks = self._source_checks = (sources.dicts, sources.keys,
                                            AtAddresses(sources.tensors, sources.ptrs))
        # every bound source at its bound address: one gather of storage words, holding no
        # storage (an engine's dropped weights are freed), else the addresses compared
        if not (self._sources_held(checks) and self._at_addresses(checks[2], report)):
            return False
        self._sources_checked = report
        return True

    def _at_addresses(self, at: AtAddresses, report: Any) -> bool:
        """The sources' address check ``at``; where the plan's startup tensors are joined
        (:attr:`startup`), one :class:`~derivgraph.addresses.AtAddresses` over both instead
        (the same rule over the union: one gather where there were two): when it passes, the
        startup tensors are proven too (:attr:`startup_checked` is ``report``). Its first use
        runs the sources' own check first (so that it keeps its proof for later), then takes
        the joint's words; a joint check that fails, or has no words (an exact compare each
        time), is dropped until the sources or the startup tensors are bound again: the
        separate checks decide from then on."""
        joint = self._joined(at)
        if joint is not None and joint.words is not None:
            if joint.intact():
                self.startup_checked = report
                return True
            self._drop_joint()
            return at.intact()
        intact = at.intact()
        if intact and joint is not None:  # the joint's first check: its words taken
            if joint.intact() and joint.words is not None:
                self.startup_checked = report
            else:
                self._drop_joint()
        return intact

    def _drop_joint(self) -> None:
        joint = self._joint
        if joint is not None:
            self._joint = (joint[0], joint[1], None)

    def _joined(self, at: AtAddresses) -> AtAddresses | None:
        """The joint check of the sources' ``at`` and the current startup check (made once
        per pair; None: no startup tensor, more than :data:`JOINT_MAX`, nothing joined, or
        dropped)."""
        if self.startup is None:
            return None
        startup = self.startup()
        joint = self._joint
        if joint is None or joint[0] is not at or joint[1] is not startup:
            both = None if not 0 < len(startup) <= JOINT_MAX else AtAddresses(
                at.tensors + startup.tensors, at.ptrs + startup.ptrs)
            joint = self._joint = (at, startup, both)
        return joint[2]

    def _sources_held(self, checks: tuple[list[Any], list[str], AtAddresses]) -> bool:
        """Every source's holder holds the bound source: one identity sweep, or only the
        holders in the dicts whose version tag moved (then the tags are settled)."""
        dicts, keys, at = checks
        tensors = at.tensors
        watch = self._source_watch
        if watch is None:
            if not all(map(_is, map(dict.get, dicts, keys), tensors)):
                return False
            if self._source_watchable:
                self._source_watch = watch_items(dicts, NO_DICT)
                self._source_watchable = self._source_watch is not None
            return True
        suspects = watch.suspects()
        if not suspects:
            return True
        if any(dicts[i].get(keys[i]) is not tensors[i] for i in suspects):
            return False  # not settled: reported until the sources are bound again
        watch.settle()
        return True

    def changed_sources(self, graph: DerivedGraph) -> tuple[list[str], list[str]]:
        """(sources whose shape or dtype changed, sources that only moved)."""
        changed, moved = [], []
        bound = self._sources
        for src, tensor, ptr in zip(bound.paths, bound.tensors, bound.ptrs):
            current = get_path(self.model, src)
            if current is MISSING or not isinstance(current, torch.Tensor):
                raise SourceChanged("sources are gone from the model", [src])
            node = graph.nodes[src]
            if tuple(current.shape) != node.shape or current.dtype != node.dtype:
                changed.append(src)
            elif current is not tensor or current.data_ptr() != ptr:
                moved.append(src)
        return changed, moved

    def moved(self, source_ptrs: Mapping[str, tuple[int, int]], report: Any = None,
              after: AtAddresses | None = None) -> list[str]:
        """Derived tensors and sources whose holder now has another object or address.

        Holders and sources the accessors prove in place (owners intact, every holder the
        startup object at its startup address) are not walked; the rest are, one by one.
        ``report``: the run this check closes; a source check that run passed stands (only its
        pass, copies and rebind ran since: they write derived tensors and their holders, never
        a source), once: the run's proof is used up here. ``after``: tensors a later check of
        the same reload needs at fixed addresses (the guard's startup tensors), joined to the
        holders' address check (:meth:`_holders_at_startup`).
        """
        table = self.table
        rebound, self._rebound = self._rebound, None
        self.after_checked = None
        fast = self.hops is not None and (self._holders_proven(report, rebound) or (
            self.hops.intact() and table.intact())) \
            and self._holders_at_startup(table, report, after)
        entries = self.entries
        keys = self._unproven() if fast else self._not_scalars()
        moved = []
        for key in keys:
            entry = entries[key]
            current = get_path(self.model, key)
            if current is not entry.storage or address_of(current) != entry.startup_ptr:
                moved.append(key)
        checked, self._sources_checked = self._sources_checked, None
        intact = (report is not None and checked is report) or self.sources_intact()
        if intact:
            paths = self._startup_sources(source_ptrs)[1]
            rows: Iterable[tuple[str, tuple[int, int]]] = zip(
                paths, map(source_ptrs.__getitem__, paths))
        else:
            rows = source_ptrs.items()  # in order (a SourcePtrs' by its lists)
        for path, (obj_id, ptr) in rows:
            current = get_path(self.model, path)
            if id(current) != obj_id or address_of(current) != ptr:
                moved.append(path)
        return moved

    def _holders_at_startup(self, table: HolderTable, report: Any,
                            after: AtAddresses | None) -> bool:
        """Every storage of ``table`` at its startup address
        (:meth:`~derivgraph.runtime.accessors.HolderTable.at_startup_addresses`). Where
        ``after`` is given (and a run asks, ``report``), one
        :class:`~derivgraph.addresses.AtAddresses` over both lists instead (the same rule over
        the union: one check where there were two); when it passes, ``after`` is proven
        too (:attr:`after_checked` is ``report``); when it fails, the table's own check
        decides and ``after`` is left unproven (its owner checks it)."""
        if after is None or report is None:
            return table.at_startup_addresses()
        joint = self._after_joint
        if joint is None or joint[0] is not table or joint[1] is not after:
            both = AtAddresses(table.storages + after.tensors, table.ptrs + after.ptrs) \
                if 0 < len(after) and len(table) + len(after) <= JOINT_MAX else None
            joint = self._after_joint = (table, after, both)
        if joint[2] is not None and joint[2].intact():
            self.after_checked = report
            return True
        return table.at_startup_addresses()

    def _holders_proven(self, report: Any, rebound: tuple[Any, HolderTable] | None) -> bool:
        """Whether this run's (``report``'s) rebind proved what :meth:`moved`'s identity sweeps
        check (every hop and every holder of :attr:`table` the bound object), by the same full
        sweeps: the run's hop check swept every hop (no version tag trusted; rebuilt owners
        walked again, the accessors under them re-read), its refill read every holder, and its
        rebind stored the startup object into each stale one by a dict store, none left to the
        per-entry path. Only :meth:`moved` runs after that rebind (no store, no owner rebuilt).
        """
        return report is not None and rebound is not None and rebound[0] is report \
            and rebound[1] is self.table

    def _not_scalars(self) -> list[str]:
        """Every derived tensor's id but the Python scalars' (:meth:`refresh` found those), in
        order: one C-level sweep, none when there is no scalar."""
        if not self._scalars:
            return list(self.entries)
        scalars = set(map(_id, self._scalars))
        return list(compress(self.entries, map(operator.not_, map(scalars.__contains__,
                                                                  self.entries))))

    def _unproven(self) -> list[str]:
        """The derived tensors (not scalars) outside :attr:`table`: checked one by one."""
        cached = self._outside
        if cached is None or cached[0] is not self.table or cached[1] != len(self.entries):
            ids = self.table.ids
            cached = self._outside = (self.table, len(self.entries), [
                k for k, e in self.entries.items()
                if e.node.kind is not TensorKind.SCALAR and k not in ids])
        return cached[2]

    def _startup_sources(self, source_ptrs: Mapping[str, tuple[int, int]]) \
            -> tuple[frozenset[str], list[str]]:
        """The bound sources that are the startup objects at their startup addresses, and the
        other paths of ``source_ptrs`` (checked one by one)."""
        cached = self._proven
        if cached is None or cached[0] is not source_ptrs or cached[1] != len(source_ptrs):
            bound = self._sources
            paths = bound.paths
            same = recorded_same(source_ptrs, paths, bound.tensors, bound.ptrs)
            proven = frozenset(compress(paths, same))
            cached = self._proven = (source_ptrs, len(source_ptrs), proven,
                                     [p for p in source_ptrs if p not in proven])
        return cached[2], cached[3]

    # ---- rebinding ---------------------------------------------------------------------------
    def note_read(self, report: Any, current: list[Any], every: bool = False) -> None:
        """``current`` is what every holder of :attr:`table` held when this run (``report``)
        read them, owners up to date: its :meth:`rebind` reuses it while no owner changed.
        ``every``: the caller proved every holder holds a new tensor (none kept, none gone)."""
        self._read = (report, self.table, current, every)

    def rebind(self, report: Any = None) -> int:
        """Point every holder back at the startup object; returns how many were re-bound."""
        read, self._read = self._read, None
        checked, self._owners_checked = self._owners_checked, None
        if self.hops is not None:
            owners = self._checked_by(report, checked)  # by this run's source check
            if read is not None and report is not None and read[0] is report \
                    and read[1] is self.table and (owners or self.hops.intact()):
                # read by this run's refill; nothing re-walked since
                current, every = read[2], read[3]
                stale = self.table.every if every else self.table.stale(current)
                return self._rebind_stale(stale, current, report, every)
            if owners or self.owners_current():
                stale = self.table.changed()  # one sweep; empty: the common case
                return self._rebind_stale(stale, None, report) if stale else 0
        count = self.rebind_entries(self.entries.values(), report, self.walk().objects)
        self.refresh()
        return count

    def owners_current_for(self, report: Any) -> bool:
        """:meth:`owners_current`, without its hop sweep when this run's source check
        (``report``) already brought the owners up to date."""
        return self._checked_by(report, self._owners_checked) or self.owners_current()

    def _checked_by(self, report: Any, checked: tuple[Any, HopTable] | None) -> bool:
        """Whether this run's source check brought the owners up to date (only the pass or
        the refill's copy ran since: they write tensors, never a module)."""
        return report is not None and checked is not None and checked[0] is report \
            and checked[1] is self.hops

    def _rebind_stale(self, stale: Sequence[int], current: list[Any] | None, report: Any,
                      every: bool = False) -> int:
        """Re-bind the holders at ``stale``; ``current``: what every holder of the table held
        when read (None: the stale ones are read here). Every caller runs after this run's hop
        check (:meth:`HopTable.refresh <derivgraph.runtime.accessors.HopTable.refresh>`, by the
        source check, the refill's read or :meth:`rebind`): it left the hops' watch settled."""
        table = self.table
        if not stale:
            table.settle()  # read in full by this run's refill: every holder proven
            self._rebound = self._swept_in_full(report, current, table)
            return 0
        values = table.values(stale) if current is None else \
            current if len(stale) == len(current) else list(map(current.__getitem__, stale))
        count, rest = table.rebind(stale, values, every)
        if rest:
            count += self.rebind_entries([table.entries[i] for i in rest], report,
                                         self.hops.objects)
            table.refresh(rest, self._where)
        if self._scalars and not self._scalars_current():
            count += self.rebind_entries(self._scalars, report, self.hops.objects)
        # the plan's own stores moved the tags of the dicts it wrote: every holder is proven
        # now, and so is every hop (checked by this rebind or this run, nothing else ran since)
        # and every source where this run's source check passed; a watch this run's check
        # left settled keeps its snapshot where these stores went into none of its dicts
        table.settle()
        stored = None if rest or self._scalars else table.watch  # None: dicts not known
        hops = self.hops.watch
        if not _kept(hops, stored):
            self.hops.settle()
        sources = self._source_watch
        if report is not None and self._sources_checked is report and sources is not None \
                and not _kept(sources, stored):
            sources.settle()
        self._rebound = None if rest else self._swept_in_full(report, current, table)
        return count

    def _swept_in_full(self, report: Any, current: list[Any] | None,
                       table: HolderTable) -> tuple[Any, HolderTable] | None:
        """``(report, table)`` when this run read every holder of ``table`` (``current``) and
        its hop check was a full sweep (no version tags trusted), else None (see moved)."""
        if report is None or current is None or self.hops is None or self.hops.watch is not None:
            return None
        return report, table

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


def _kept(watch: ItemWatch | None, stored: ItemWatch | None) -> bool:
    """Whether ``watch``, settled by this run's check, is still settled after the rebind's
    stores, which went only into the dicts ``stored`` watches (None: not known): none of its
    dicts is one of those, so no tag it reads moved (its snapshot is the current tags). A store
    the rebind does not see (a container put back before it) can leave it stale: the next
    check then only widens (a stale snapshot names the dicts moved since as suspects, each
    checked item by item, then settled), never misses a change."""
    return watch is not None and stored is not None and watch.apart_from(stored)


def _read_ptrs(reads: PathReads | None, objects: list[Any]) -> list[int] | None:
    """The addresses ``reads`` recorded of its first objects (:attr:`PathReads.ptrs`) where
    those are ``objects``, row by row (one identity sweep; the caller checked that its paths
    start with theirs); None where it recorded none or another object is bound."""
    if reads is None or reads.ptrs is None:
        return None
    n = len(objects)
    if len(reads.objects) < n or len(reads.ptrs) < n \
            or not all(map(_is, objects, reads.objects)):
        return None
    return _head(reads.ptrs, n)


def _head(rows: list[Any], n: int) -> list[Any]:
    """``rows[:n]``, as ``rows`` itself where it has exactly ``n`` rows (the one rule by which
    :meth:`Holders.bind` keeps a read list of the caller's: those lists are read only, by
    it and by the record that shares them, ``SourcePtrs``)."""
    return rows if len(rows) == n else rows[:n]


def recorded_ptrs(paths: list[str], objects: list[Any],
                  recorded: Mapping[str, tuple[int, int]]) -> list[int] | None:
    """The recorded address of each path's object where ``recorded`` (path -> (object id,
    address) of objects still alive, nothing re-pointed since) names every path with its
    very object (ids of live objects are unique); None else (the caller reads them).

    Where ``recorded`` starts with ``paths`` (its first keys are they, in their order: the
    startup record's paths start with the sources), its first values are theirs, taken
    in order; else each path is looked up."""
    n = len(paths)
    got = list(islice(recorded.values(), n)) if list(islice(recorded, n)) == paths \
        else list(map(recorded.get, paths, repeat(None)))
    if None in got or list(map(id, objects)) != list(map(_first, got)):
        return None
    return list(map(_second, got))
