"""Engine-computed tensors at run time: what a recompute refuses and what a refill takes.

The compile half (adoption, meta layouts) is :mod:`derivgraph.compiler.engine`. Here:
``run()`` refuses, before anything is written, a recompute that needs a tensor only the engine
computes (:func:`refuse_recompute`, DG082), and ``refill()`` copies the engine's fresh values
into the startup storage: read through the holder accessors and checked in a few C-level
sweeps (:class:`RefillTable`), copied with one ``torch._foreach_copy_``; what the table cannot
prove takes the per-entry path (:func:`take_engine_values`), the reference.
"""

from __future__ import annotations

import fnmatch
import logging
import operator
from array import array
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from itertools import accumulate, chain, compress, count, repeat
from typing import Any, NamedTuple

import torch

from derivgraph.column_layout import ColumnLayouts
from derivgraph.errors import EngineComputedError, Rule, SpecIssue
from derivgraph.paths import MISSING, get_path, step_into
from derivgraph.runtime.accessors import HolderTable
from derivgraph.runtime.entry import Entry, HeldEntries
from derivgraph.runtime.flat_copy import FlatCopy, flat_runs, key_runs
from derivgraph.spec.kinds import is_engine

logger = logging.getLogger(__name__)

__all__ = ["Layouts", "RefillTable", "Taken", "check_refillable", "engine_value", "foreach_copy",
           "layout_spans", "opaque_entries", "refuse_recompute", "strided_positions",
           "take_engine_values"]

_is = operator.is_
_not = operator.not_
_device = operator.attrgetter("device")
_shape = operator.attrgetter("shape")
_dtype = operator.attrgetter("dtype")
_is_meta = operator.attrgetter("is_meta")
_numel = torch.Tensor.numel
_dim = torch.Tensor.dim
_STARTUP_DATA = operator.attrgetter("startup_data")

try:  # torch's C++ check of many tensors' properties in one call (TorchDynamo's guards)
    from torch._C._dynamo.guards import TensorGuards as _TensorGuards
except ImportError:  # a build without it: the layout check's sweeps alone
    _TensorGuards = None
#: how many read masks a refill table keeps what they copy for (:meth:`RefillTable._part`)
MAX_PARTS = 8
#: how many times a :class:`Layouts` builds its guard (:meth:`Layouts.match`):
#: an engine whose fresh tensors keep differing from the last accepted ones in what the guard
#: also checks (Python type, dispatch keys) is left to the sweeps
MAX_GUARDS = 3


def opaque_entries(entries: Mapping[str, Entry]) -> list[str]:
    """Engine tensors no step makes (no formula the plan can run)."""
    return [n for n, e in entries.items() if e.node.input is None and is_engine(e.node.decl)]


def _touches(module_path: str, names: list[str]) -> bool:
    """Whether a reload of ``names`` (exact, prefix or glob) wrote into ``module_path``."""
    if not module_path:
        return True
    depth = module_path.count(".") + 1
    for n in names:
        if n == module_path or n.startswith(module_path + ".") or \
                module_path.startswith(n + "."):
            return True
        if fnmatch.fnmatchcase(module_path, ".".join(n.split(".")[:depth])):
            return True
    return False


def refuse_recompute(entries: Mapping[str, Entry], updated: Iterable[str] | None) -> None:
    """Raise :class:`EngineComputedError` if this recompute needs an opaque engine tensor."""
    names = None if updated is None else list(updated)
    issues = []
    for key in opaque_entries(entries):
        node = entries[key].node
        if names is not None and not _touches(node.bound.module_path, names):
            continue
        issues.append(SpecIssue(
            Rule.ENGINE_VALUE, f"{key} is engine-computed: call refill() after the engine's "
            "post-load step, or register an op that computes it",
            "the recompute path (run) cannot make it; after a reload that reran the post-load "
            "step use plan.refill(), or register the op (derivgraph.register_op) and name it in "
            "the spec's `formula`",
            node.decl.location, key))
    if issues:
        raise EngineComputedError(issues)


def check_refillable(model: Any, entry: Entry) -> None:
    """After a refill step found no fresh value: raise if the engine left an incompatible one."""
    owner = get_path(model, entry.node.owner_path)
    if owner is MISSING or owner is None:
        return  # reported by rebind as a missing owner
    current = get_path(owner, entry.node.decl.name)
    if not isinstance(current, torch.Tensor) or current is entry.storage:
        return
    startup = entry.storage
    raise EngineComputedError([SpecIssue(
        Rule.ENGINE_VALUE, f"the engine's fresh {entry.id} ({list(current.shape)} "
        f"{current.dtype}) cannot be copied into the startup tensor ({list(startup.shape)} "
        f"{startup.dtype})", "a captured graph reads the startup layout: the engine must "
        "keep the layout across reloads, or the graph must be recaptured",
        entry.node.decl.location, entry.id)])


def engine_value(model: Any, entry: Entry, owners: Mapping[str, Any] | None = None) \
        -> torch.Tensor | None:
    """The engine's fresh tensor at ``entry``'s holder, if it can be copied into the storage."""
    path = entry.node.owner_path
    owner = owners.get(path, MISSING) if owners is not None and path else MISSING
    if owner is MISSING:
        owner = get_path(model, path)
    if owner is MISSING or owner is None:
        return None
    current = step_into(owner, entry.node.decl.name)
    if (isinstance(current, torch.Tensor) and current is not entry.storage
            and current.shape == entry.storage.shape and current.dtype == entry.storage.dtype
            and current.device.type != "meta"):
        return current
    return None


def take_engine_values(model: Any, entries: Mapping[str, Entry], targets: Iterable[str],
                       owners: Mapping[str, Any], report: Any) -> set[str]:
    """Copy the engine's fresh value of each of ``targets`` into its startup storage.

    Opaque engine tensors without a usable fresh value are refused before any copy. Returns
    the targets taken from the engine.
    """
    opaque = set(opaque_entries(entries))
    ours, theirs, taken = [], [], set()
    for target in targets:
        entry = entries[target]
        fresh = engine_value(model, entry, owners)
        if fresh is None and target in opaque:
            check_refillable(model, entry)  # raises before any copy if the layout changed
        if fresh is not None:
            ours.append(entry.storage)
            theirs.append(fresh)
            taken.add(target)
            report.bytes += entry.nbytes()
    if ours:
        torch._foreach_copy_(ours, theirs)
    report.taken_from_engine = report.written = report.steps = len(ours)
    return taken


def layout_spans(tensors: list[torch.Tensor]) -> list[tuple[int, int]]:
    """``[start, end)`` spans of equal (dtype, device) in ``tensors`` (sort them first); an
    empty list is one empty span."""
    return key_runs([(t.dtype, t.device) for t in tensors]) or [(0, 0)]


def foreach_copy(ours: list[torch.Tensor], theirs: list[torch.Tensor],
                 spans: list[tuple[int, int]] | None = None) -> None:
    """``ours[i].copy_(theirs[i])`` for all i: one ``_foreach_copy_`` per (dtype, device) span
    (each one a fused launch on CUDA). Without ``spans``, the lists are grouped here."""
    if not ours:  # _foreach_copy_ refuses empty lists
        return
    if spans is None:
        groups: dict[tuple[torch.dtype, torch.device], list[int]] = {}
        for i, t in enumerate(ours):
            groups.setdefault((t.dtype, t.device), []).append(i)
        if len(groups) > 1:
            for index in groups.values():
                torch._foreach_copy_([ours[i] for i in index], [theirs[i] for i in index])
            return
        spans = [(0, len(ours))]
    for start, end in spans:
        if end - start == len(ours):
            torch._foreach_copy_(ours, theirs)
        elif end > start:
            torch._foreach_copy_(ours[start:end], theirs[start:end])


class Taken:
    """The outcome of a refill's fast read: which targets take the engine's value (``mask``
    over the table's targets; ``None``: every target, the engine rebuilt them all)."""

    __slots__ = ("ours", "theirs", "mask", "nbytes", "constants", "spans", "flat")

    def __init__(self, ours: list[torch.Tensor], theirs: list[torch.Tensor],
                 mask: tuple[bool, ...] | None,
                 nbytes: int, constants: bool, spans: list[tuple[int, int]],
                 flat: Sequence[tuple[int, int, FlatCopy]] = ()):
        self.ours, self.theirs, self.mask = ours, theirs, mask
        self.nbytes, self.constants, self.spans = nbytes, constants, spans
        self.flat = flat  # runs of small CPU tensors copied flat; ``spans`` cover the rest

    def copy(self) -> None:
        """One :class:`~derivgraph.runtime.flat_copy.FlatCopy` per flat run, then one
        ``_foreach_copy_`` per (dtype, device) span of the rest: each a fused launch on CUDA."""
        theirs = self.theirs
        for start, end, run in self.flat:
            run.copy(theirs[start:end])
        foreach_copy(self.ours, theirs, self.spans)


class RefillTable:
    """The refill targets (derived tensors computed by the pass, constants, engine tensors) as
    positions in a :class:`HolderTable`, with their layouts and sizes precomputed.

    Everything a refill can know before the engine ran is computed here, once per table: the
    positions to pick (none when the targets are the table in its order), the expected shapes
    and dtypes, the byte counts and the (dtype, device) spans of the copies. A refill then reads
    the fresh tensors in one sweep and checks them in one sweep per property (:meth:`take`).
    """

    __slots__ = ("table", "ids", "index", "storages", "shapes", "dtypes", "nbytes",
                 "_is_constant", "_constant_ids", "engine", "complete", "spans", "whole",
                 "_pick", "_total", "_constants", "_generation", "flat", "rest_spans",
                 "_numels", "_layouts", "_parts")

    def __init__(self, table: HolderTable, targets: list[str], constants: set[str],
                 engine: set[str], layouts: ColumnLayouts | None = None,
                 at_startup: bool = False):
        """``layouts``: the compile's layout book; where it holds every target's storage, the
        dtypes, shapes and devices are its records' (proved where the columns were made)
        instead of each storage's, read again. ``at_startup``: the caller's proof that the
        words of ``table``'s address check were taken from the state that check just proved
        (every storage at its startup address; nothing run since that moves one:
        ``Plan.prepare``), so the words' gather of :meth:`HolderTable.startup_ptrs
        <derivgraph.runtime.accessors.HolderTable.startup_ptrs>` would find them kept.
        ``constants``: the caller's set, read again where :attr:`is_constant` is first read
        (not written after: the plan passes a fresh one)."""
        # the positions read as strided segments of the table's ids where they are (each
        # checked), else by a dict of positions (None: no holder of the table)
        index = strided_positions(table.id_list, targets) \
            if len(table.ids) == len(table.id_list) else None
        position: dict[str, int] | None = None
        if index is None:
            position = dict(zip(table.id_list, count()))
            index = list(map(position.get, targets))  # one sweep
        # (a segments' answer holds positions only: no None looked for)
        if position is not None and None in index \
                or not (table.all_fast or all(map(table.fast.__getitem__, index))):
            if position is None:
                position = dict(zip(table.id_list, count()))
            usable = [t for t in targets if t in position and table.fast[position[t]]]
            index = list(map(position.__getitem__, usable))
        else:  # the common case: every target is a holder bound by one dict store
            usable = targets
        self.table = table
        self.complete = len(usable) == len(targets)  # else: the per-entry path
        self._generation = table.generation  # fast[] as checked here

        # stable sort by (dtype, device, shape), by name: contiguous (dtype, device) spans,
        # shapes adjacent; each property read in one sweep, each dtype and device named once
        storages = list(map(table.storages.__getitem__, index))
        held = None if layouts is None else layouts.of(storages)
        if held is not None and None in held:
            held = None  # a target the book does not hold: each storage read
        if held is not None:  # the column records: a key made once per record, not per target
            order, runs, self.spans = _by_key(held, _record_key)
            held = list(map(held.__getitem__, order))
            # a run's records share their key (one dtype, device and shape): each run's
            # first record read once, repeated over the run
            firsts = [(held[a], b - a) for a, b in runs]
            self.shapes = list(chain.from_iterable(repeat(r.shape, k) for r, k in firsts))
            self.dtypes = list(chain.from_iterable(repeat(r.dtype, k) for r, k in firsts))
        else:
            dtypes, shapes = list(map(_dtype, storages)), list(map(_shape, storages))
            devices = list(map(_device, storages))
            keys = list(zip(map({d: str(d) for d in set(dtypes)}.__getitem__, dtypes),
                            map({d: str(d) for d in set(devices)}.__getitem__, devices),
                            map(tuple, shapes)))
            order, runs, self.spans = _by_key(keys, _as_key)
            self.shapes = list(map(shapes.__getitem__, order))
            self.dtypes = list(map(dtypes.__getitem__, order))
        self.ids = list(map(usable.__getitem__, order))
        self.index = list(map(index.__getitem__, order))
        self.storages = list(map(storages.__getitem__, order))
        self._pick: Callable[[list[Any]], list[Any]] | None = _picker(self.index, len(table))
        # a run's tensors have one numel and element size: read once per run
        sizes = [(b - a, self.storages[a].numel(), self.storages[a].element_size())
                 for a, b in runs]
        # (an int64 array: no reference per target for the collector to walk; read only by
        # sums, whole or masked)
        self.nbytes = array("q", chain.from_iterable(repeat(n * e, k) for k, n, e in sizes))
        self._total = sum(self.nbytes)
        # an all-rebuilt read copies runs of small CPU tensors flat, the rest by foreach; the
        # targets' addresses are the table's startup ones where its words prove every holder's
        # storage still there (one gather; the words of a check that passed), else read
        proven = table.ptrs if at_startup else table.startup_ptrs()
        ptrs = None if proven is None else list(map(proven.__getitem__, self.index))
        self.flat = flat_runs(self.storages, runs, held, ptrs,
                              None if ptrs is None else _startup_holders(table, self.index))
        self.rest_spans = _without(self.spans, [(a, b) for a, b, _ in self.flat])
        # per target in the sorted order, as a partly rebuilt read's mask is
        # (each target's flag made where a partly rebuilt read first needs it: :attr:`is_constant`;
        # whether any target is one: one C-level membership sweep that stops at the first)
        self._is_constant: list[bool] | None = None
        self._constant_ids = constants
        self._constants = not constants.isdisjoint(self.ids)
        # per target, 1 where it is an engine tensor (bytes: no reference per target; read
        # only by a masked any)
        self.engine = bytes(map(engine.__contains__, self.ids)) if engine \
            else bytes(len(self.ids))  # no engine tensor: none of them is one
        # the targets are every holder of the table (in any order): a read that finds every
        # target rebuilt proves every holder holds a fresh tensor (the rebind sweeps no more)
        self.whole = len(self.index) == len(table) and set(self.index) == set(range(len(table)))
        self._numels = list(chain.from_iterable(repeat(n, k) for k, n, _ in sizes))
        # an all-rebuilt read's (a run's targets share one shape: its key's)
        self._layouts = Layouts(self.dtypes, self.shapes, self._numels, runs)
        # its guard built now, from the targets (what a fresh tensor must match), so that the
        # first refill of a process does not build it; an engine whose fresh tensors differ
        # from the targets in what the guard also checks gets one built from theirs
        records = set() if held is None else set(held)
        if held is not None and not any(map(_is_meta, records)):
            # the sweeps' answer is known: the records'; where every record proves row-major
            # strides, the checks take the targets' own (no list of any-strides converted)
            self._layouts.guard(self.storages, strides=all(
                r.contiguous is True for r in records))
        else:
            self._layouts.match(self.storages)
        self._parts: dict[tuple[bool, ...], _Part] = {}  # a partly rebuilt read's, by mask

    @property
    def is_constant(self) -> list[bool]:
        """Per target in the table's order, whether it is a constant (made on first read: a
        partly rebuilt read's :meth:`_part`; ``constants`` as the constructor was given it)."""
        flags = self._is_constant
        if flags is None:
            flags = self._is_constant = list(map(self._constant_ids.__contains__, self.ids))
        return flags

    def take(self, current: list[Any]) -> Taken | None:
        """The engine's fresh tensors, checked in a few C-level sweeps; None when any target
        needs the per-entry path (a missing holder, another layout, a meta tensor)."""
        if not self.complete or self._generation != self.table.generation:
            return None  # a holder left the dict store path since the table was made
        if not self.index:
            return Taken([], [], (), 0, False, [])
        picked = current if self._pick is None else self._pick(current)
        if not any(map(_is, picked, self.storages)):  # the engine rebuilt every target
            if not self._layouts.match(picked):
                return None
            return Taken(self.storages, picked, None, self._total, self._constants,
                         self.rest_spans, self.flat)
        mask = tuple(map(_not, map(_is, picked, self.storages)))
        part = self._parts.get(mask)
        if part is None:
            part = self._part(mask)
        if part is _REFUSED:
            return None  # an engine tensor not rebuilt: check_refillable decides
        theirs = list(compress(picked, mask))
        if not part.layouts.match(theirs):
            return None
        return Taken(part.ours, theirs, mask, part.nbytes, part.constants, part.spans)

    def _part(self, mask: tuple[bool, ...]) -> _Part:
        """What a read that found ``mask`` rebuilt copies, computed once per mask (a reload
        rebuilds the same targets every time; at most :data:`MAX_PARTS` masks kept)."""
        if any(compress(self.engine, map(_not, mask))):
            part = _REFUSED
        else:
            cuts = [0, *accumulate(sum(mask[a:b]) for a, b in self.spans)]
            shapes = list(compress(self.shapes, mask))
            part = _Part(Layouts(list(compress(self.dtypes, mask)), shapes,
                                 [n for n, m in zip(self._numels, mask) if m]),
                         list(compress(self.storages, mask)), sum(compress(self.nbytes, mask)),
                         any(compress(self.is_constant, mask)), list(zip(cuts, cuts[1:])))
        if len(self._parts) >= MAX_PARTS:
            self._parts.clear()
        self._parts[mask] = part
        return part


class Layouts:
    """The layouts a list of fresh tensors must have (their targets' dtypes and shapes), and
    the check of a list against them (:meth:`match`)."""

    __slots__ = ("dtypes", "shapes", "_dims", "_sizes", "_nd", "_guard", "_guards")

    def __init__(self, dtypes: list[torch.dtype], shapes: list[torch.Size], numels: list[int],
                 runs: Sequence[tuple[int, int]] | None = None):
        """``runs``: ``[start, end)`` runs of ``shapes`` whose shapes are equal (the caller's
        proof; covering every shape, in order): each run's number of dimensions read once,
        its indices taken whole, else each shape's read."""
        self.dtypes, self.shapes = dtypes, shapes
        # (numel, ndim) decide a shape of ndim <= 1, so only the targets of ndim >= 2 have
        # their shape read (torch.Size is the costly read)
        if runs is None:
            dims = self._dims = list(map(len, shapes))
            nd = list(compress(count(), map((1).__lt__, dims)))  # the indices of ndim >= 2
        else:
            ranks = [(a, b, len(shapes[a])) for a, b in runs if b > a]
            dims = self._dims = list(chain.from_iterable(repeat(d, b - a) for a, b, d in ranks))
            nd = list(chain.from_iterable(range(a, b) for a, b, d in ranks if d > 1))
        self._sizes: tuple[list[int], list[int]] | None = None
        self._nd: tuple[Callable[[list[Any]], list[Any]] | None, list[Any]] | None = None
        if 2 * len(nd) < len(shapes):
            self._sizes = (numels, dims)
            self._nd = (_picker(nd, len(shapes)), [shapes[i] for i in nd])
        self._guard: Any = None
        self._guards = 0

    def match(self, theirs: list[Any]) -> bool:
        """Every fresh tensor has its target's dtype and shape and is not a meta tensor (one
        C-level sweep per property); False for a holder gone (None) or not a tensor.

        Where torch has TorchDynamo's ``TensorGuards`` (one C++ loop over the tensors), a
        guard built from the last fresh tensors these sweeps accepted (so of the targets'
        sizes) proves the same in one call: it passes only for tensors of the same Python type,
        dispatch keys (so not meta), dtype, device, ``requires_grad`` and sizes as those. When
        it fails the sweeps decide (and, if they accept, the guard is built again from these
        tensors, at most :data:`MAX_GUARDS` times)."""
        guard = self._guard
        if guard is not None and guard.check(*theirs):
            return True
        if not self.swept(theirs):
            return False
        self.guard(theirs)
        return True

    def guard(self, theirs: list[Any], strides: bool = False) -> None:
        """Build the guard of :meth:`match` from ``theirs``, tensors that :meth:`swept`
        accepts (the caller's proof; at most :data:`MAX_GUARDS` times). Each check takes its
        tensor's sizes (``dynamic_dims_sizes=None``: the targets' sizes, by that proof; no
        list of sizes converted per tensor) and any strides (None per dimension), or with
        ``strides`` its tensor's own strides (``dynamic_dims_strides=None``: no list per
        tensor converted; a stricter guard, so :meth:`match` answers the same: a fresh
        tensor of other strides fails it, the sweeps decide and the guard is built again
        from theirs with any strides). ``strides`` only for strided tensors (the caller's
        proof: torch's constructor aborts the process on a tensor without strides, sparse
        CSR)."""
        if _TensorGuards is not None and self._guards < MAX_GUARDS:
            self._guards += 1
            try:
                self._guard = _TensorGuards(
                    *theirs, dynamic_dims_sizes=None,
                    dynamic_dims_strides=None if strides else _any_strides(self._dims))
            except (TypeError, RuntimeError) as exc:  # a torch whose private signature differs
                logger.debug("layout guard not built (%s); the sweeps decide", exc)
                self._guard, self._guards = None, MAX_GUARDS

    def swept(self, theirs: list[Any]) -> bool:
        """:meth:`match` by one C-level sweep per property (the reference)."""
        try:
            if list(map(_dtype, theirs)) != self.dtypes or any(map(_is_meta, theirs)):
                return False
            if self._sizes is None:
                return list(map(_shape, theirs)) == self.shapes
            numels, dims = self._sizes
            pick, shapes = self._nd  # type: ignore[misc]
            return list(map(_numel, theirs)) == numels and list(map(_dim, theirs)) == dims \
                and (not shapes or list(map(_shape, theirs if pick is None else pick(theirs)))
                     == shapes)
        except (AttributeError, TypeError):  # not a tensor: the per-entry path decides
            return False


def _startup_holders(table: HolderTable, index: list[int]) -> list[Any] | None:
    """What keeps the startup storage of each holder at ``index`` alive: its entry's startup
    record (:attr:`~derivgraph.runtime.entry.Entry.startup_data`: the storage, or an alias of
    it, held for the entry's life), where every one has it (else None: a flat copy reads each
    tensor's storage). A table of a :class:`~derivgraph.runtime.entry.HeldEntries` reads its
    columns' rows by column (:meth:`~derivgraph.runtime.entry.HeldEntries.read`: no entry made)."""
    entries = table.entries
    if type(entries) is HeldEntries:
        held = list(map(entries.read("startup_data").__getitem__, index))
    else:
        held = list(map(_STARTUP_DATA, map(entries.__getitem__, index)))
    return None if any(map(_is, held, repeat(None))) else held


def _any_strides(dims: list[int]) -> list[list[None]]:
    """The guard's strides per tensor (None: any), from each tensor's number of dimensions:
    one list per distinct number, shared by the tensors that have it (the guard only reads
    them)."""
    strides = {d: [None] * d for d in set(dims)}
    return list(map(strides.__getitem__, dims))


class _Part(NamedTuple):
    """What a read that found some targets rebuilt copies (:meth:`RefillTable._part`)."""

    layouts: Layouts
    ours: list[torch.Tensor]
    nbytes: int
    constants: bool
    spans: list[tuple[int, int]]


_REFUSED: Any = object()  # a mask leaving an engine tensor unrebuilt (check_refillable decides)


def _without(spans: list[tuple[int, int]], runs: list[tuple[int, int]]) \
        -> list[tuple[int, int]]:
    """The parts of ``spans`` outside ``runs`` (sorted, each inside one span)."""
    out = []
    for start, end in spans:
        at = start
        for a, b in runs:
            if start <= a < end:
                if a > at:
                    out.append((at, a))
                at = b
        if end > at:
            out.append((at, end))
    return out


_KIND = operator.itemgetter(0, 1)  # a sort key's (dtype, device)
#: at most this many distinct layouts: a refill table gathers each layout's targets by one
#: C-level sweep (:func:`_by_key`); more take one stable sort of the targets by their rank
MAX_RECORDS = 32

Grouping = tuple[list[int], list[tuple[int, int]], list[tuple[int, int]]]


def _record_key(record: Any) -> tuple[str, str, tuple[int, ...]]:
    """A layout record's sort key: the names of its dtype and device, and its shape."""
    return str(record.dtype), str(record.device), tuple(record.shape)


def _as_key(key: Any) -> Any:
    """A sort key that is its own key (:func:`_by_key` over the keys themselves)."""
    return key


def _by_key(items: list[Any], key: Callable[[Any], tuple[str, str, tuple[int, ...]]]) \
        -> Grouping:
    """The refill table's order, runs and spans: the stable sort of the items by
    ``key(item)``, the runs of one (dtype, device, shape) and the spans of one (dtype,
    device). Each key is made once per distinct item (hashable: a layout record, one per
    column, by identity; or a key itself) and ranked; the items of each rank are gathered by
    one C-level membership sweep over the rank's distinct items (up to :data:`MAX_RECORDS`
    ranks; a rank's size is what its sweep gathered), else by one stable sort by rank."""
    keys = {item: key(item) for item in dict.fromkeys(items)}
    ranked = list(set(keys.values()))
    ranked.sort()
    if len(ranked) <= MAX_RECORDS:  # a sweep per rank over its distinct items (no rank list)
        order: list[int] = []
        sizes: list[int] = []
        for k in ranked:
            members = frozenset(item for item, own in keys.items() if own == k)
            before = len(order)
            order += compress(count(), map(members.__contains__, items))  # as a dict finds
            sizes.append(len(order) - before)
    else:
        rank = {k: i for i, k in enumerate(ranked)}
        ranks = list(map({item: rank[k] for item, k in keys.items()}.__getitem__, items))
        order = sorted(range(len(items)), key=ranks.__getitem__)
        counted = Counter(ranks)
        sizes = list(map(counted.__getitem__, range(len(ranked))))
    runs: list[tuple[int, int]] = []
    spans: list[tuple[int, int]] = []
    start = 0
    for i, k in enumerate(ranked):
        end = start + sizes[i]
        runs.append((start, end))
        if spans and ranked[i - 1][:2] == k[:2]:
            spans[-1] = (spans[-1][0], end)
        else:
            spans.append((start, end))
        start = end
    return order, runs, spans or [(0, 0)]


#: :func:`strided_positions`: segments read at most, targets in a period at most, and how far
#: past a found target the next one of a segment's first period is looked for
MAX_SEGMENTS, MAX_PERIOD, NEAR = 16, 8, 64


def strided_positions(items: list[str], targets: list[str]) -> list[int] | None:
    """Each target's position in ``items`` (their items distinct), read as segments in which
    the positions repeat with a period of at most :data:`MAX_PERIOD` targets, one step apart
    (a stamped table's ``layers.{i}.a``, ``layers.{i}.b``, ...): a segment's first targets
    found by a scan, the rest predicted, and the prediction checked against the targets by
    one equality sweep that ends the segment at the first target it misses. None where a
    segment has no period or :data:`MAX_SEGMENTS` do not give every target (a target not
    in ``items`` included): the caller looks the positions up instead."""
    n, size = len(targets), len(items)
    out: list[int] = []
    for _ in range(MAX_SEGMENTS):
        if len(out) == n:
            return out
        rest = targets[len(out):]
        head = _head(items, rest, out[-1] + 1 if out else 0)
        if len(head) == len(rest):
            return out + head
        period, step = _period(head)
        if not step:
            return None
        length = len(rest)
        for r in range(period):  # every predicted position inside ``items``
            length = min(length, r + period * ((size - 1 - head[r]) // step + 1))
        predicted = [0] * length
        for r in range(period):
            predicted[r::period] = range(head[r], head[r] + step * len(range(r, length, period)),
                                         step)
        good = length if _strided_equal(items, rest, head, period, step, length) else next(
            compress(count(), map(_not, map(operator.eq, map(
                items.__getitem__, predicted), rest))), length)  # >= 1: head[0] is found
        out += predicted if good == length else predicted[:good]
    return out if len(out) == n else None


def _strided_equal(items: list[str], targets: list[str], head: list[int], period: int,
                   step: int, length: int) -> bool:
    """Whether every one of the first ``length`` targets is the item at its predicted
    position (target ``r + period * k`` at ``head[r] + step * k``, each inside ``items``):
    one list compare per residue ``r``, of ``items``' strided slice and the targets' (C-level
    slices, no position list read); False says only that one differs (the caller's sweep
    finds where)."""
    for r in range(period):
        count_r = len(range(r, length, period))
        if items[head[r]:head[r] + step * count_r:step] != targets[r:length:period]:
            return False
    return True


def _head(items: list[str], targets: list[str], hint: int) -> list[int]:
    """The positions of ``targets``' first ones: the first from ``hint`` (else from the
    start), each next within :data:`NEAR` after the one before (up to two periods and one);
    empty when the first is not in ``items``."""
    try:
        first = items.index(targets[0], hint)
    except ValueError:
        try:
            first = items.index(targets[0])
        except ValueError:
            return []
    head = [first]
    for target in targets[1:2 * MAX_PERIOD + 1]:
        at = head[-1] + 1
        try:
            head.append(items.index(target, at, at + NEAR))
        except ValueError:
            break
    return head


def _period(head: list[int]) -> tuple[int, int]:
    """The shortest period ``q`` (at most :data:`MAX_PERIOD`) and step ``d > 0`` with
    ``head[k + q] == head[k] + d`` for every ``k``; (0, 0) when there is none."""
    for q in range(1, min(MAX_PERIOD, len(head) - 1) + 1):
        step = head[q] - head[0]
        if step > 0 and all(head[k + q] - head[k] == step for k in range(len(head) - q)):
            return q, step
    return 0, 0


def _picker(index: list[int], size: int) -> Callable[[list[Any]], list[Any]] | None:
    """A C-level pick of ``index`` from a list of ``size``; None when it is the whole list
    (compared only where the lengths agree: no ``range`` list made for a part)."""
    if len(index) == size and index == list(range(size)):
        return None
    if not index:
        return lambda values: []
    if len(index) == 1:
        only = index[0]
        return lambda values: [values[only]]
    getter = operator.itemgetter(*index)
    return lambda values: list(getter(values))
