"""Scheduling stamped rows: a proven row takes its template's levels and group keys.

:func:`~derivgraph.compiler.schedule.levels` gives a step one level past what it reads and past
every earlier step that touched the storage it reads or writes;
:func:`~derivgraph.compiler.codegen.build_program` groups the steps of a level by a key read off
the step, the meta values of its operands and the tensor it writes. For the rows of a stamped
table whose steps are their template's renamed (:class:`~derivgraph.compiler.lower.LayerSteps`,
found by identity in the step list) both are the template's, provided, checked here a column at
a time (each position across every row, in C-level sweeps), never assumed:

* **levels** (:func:`row_levels`): every step of the template and of each row is in the list,
  each row's steps in the template's relative order; the storage each row's steps touch repeats
  the template's pattern (which positions share storage, which have none), every storage a
  template or row touches at its own positions is touched by no other layer (the template's and
  rows' addresses, counted, are all distinct), and a shared node's storage is no layer's.
  The caller (:func:`~derivgraph.compiler.schedule.levels`) proves the rest: no other step
  touches those storages or a layer's nodes. Then a row's levels depend on nothing outside it,
  and inside it on the same reads, order and storage sharing as its template's.
* **group keys** (:func:`row_keys`): every operand a key reads has the template's meta value
  (the same object) in every row, and every tensor a row writes has the template's dtype,
  shape, device and contiguity; the key of a copy or a stage depends on the action alone.

A table that fails a check is scheduled step by step as before.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from functools import cached_property
from itertools import chain, repeat
from operator import eq, is_, lt
from typing import Any

import torch

from derivgraph.column_layout import ColumnFacts, book_of
from derivgraph.compiler.graph import NodeRef
from derivgraph.compiler.lower import WRITES, Action, LayerSteps, LowerContext, Step
from derivgraph.compiler.lower_layers import column_addresses, kept_column

__all__ = ["RowLevels", "layer_fence", "row_keys", "row_levels", "same_key_facts", "step_refs"]

_CONSTANT_KEYS = frozenset({Action.COPY, Action.SCALAR})  # keyed by the action alone
_UNBOUND = object()


def step_refs(step: Step) -> list[str]:
    """The nodes whose storage ``step`` touches: what it reads, then the target it writes."""
    refs = step.reads()
    return refs + [step.target] if step.action in WRITES else refs


class RowLevels:
    """The proven rows of a step list: ``copy_of`` (row step index -> its template step's
    index), the indices of those templates' own steps (``templates``), the addresses the
    proven layers' own positions and their shared nodes hold (``fenced``), every node of
    those layers (``nodes``, made on first read from ``tables``) and the shared nodes they
    read (``shared``)."""

    def __init__(self) -> None:
        self.copy_of: dict[int, int] = {}
        self.templates: set[int] = set()
        self.fenced: set[int] = set()
        self.tables: list[Any] = []  # the proven layers' instance tables
        self.shared: set[str] = set()

    @cached_property
    def nodes(self) -> set[str]:
        """Every node of the proven layers (their templates' and rows')."""
        return set(chain.from_iterable(chain(t.template, t.ids()) for t in self.tables))


def row_levels(ctx: LowerContext, steps: Sequence[Step],
               layers: Iterable[LayerSteps]) -> RowLevels:
    """The rows of ``layers`` whose levels are their template's (see the module docstring)."""
    index = {id(s): i for i, s in enumerate(steps)}
    proofs = []
    for layer in layers:
        proof = _layer_addresses(ctx, index, layer)
        if proof is not None:
            proofs.append((layer, proof))
    return _fence(proofs) or RowLevels()


def layer_fence(ctx: LowerContext, steps: Sequence[Step],
                layers: Iterable[LayerSteps]) -> RowLevels | None:
    """:func:`row_levels` of a compact lowering (:attr:`~derivgraph.compiler.lower.
    LoweredSteps.compact`: the rows' steps are not in ``steps``, each row's being its
    template's by construction): the templates' steps (``templates``) and the layers'
    storage fence, when every layer's storage is proved; else None. ``copy_of`` is empty:
    a row's step is its template step's column."""
    index = {id(s): i for i, s in enumerate(steps)}
    proofs = []
    for layer in layers:
        firsts = list(map(index.get, map(id, layer.steps)))
        proof = _storage_proof(ctx, layer.table, layer.steps) \
            if layer.table.rows and None not in firsts else None
        if proof is None:
            return None
        proofs.append((layer, ({}, *proof, firsts)))
    return _fence(proofs)


def _fence(proofs: list[tuple[LayerSteps, tuple[Any, ...]]]) -> RowLevels | None:
    """The :class:`RowLevels` of proven layers (each with its row step index -> template step
    index, own addresses, shared nodes and their addresses, template step indices); None
    when an address is seen twice (a row shares what its template holds apart, or two layers
    share storage) or a shared node's storage is a layer's."""
    out = RowLevels()
    own: set[int] = set()
    count = 0
    shared: set[int] = set()
    for layer, (copies, addresses, shared_ids, shared_ptrs, firsts) in proofs:
        own.update(addresses)
        count += len(addresses)
        if len(own) != count:
            return None
        shared.update(shared_ptrs)
        out.copy_of.update(copies)
        out.templates.update(firsts)
        out.tables.append(layer.table)
        out.shared.update(shared_ids)
    if not shared.isdisjoint(own):
        return None
    own.update(shared)  # made here, read nowhere else: the union in place, no copy
    out.fenced = own
    return out


def _layer_addresses(ctx: LowerContext, index: dict[int, int], layer: LayerSteps,
                     ) -> tuple[dict[int, int], list[int], list[str], set[int], list[int]] | None:
    """For a table whose steps are all in the list in the template's order and whose storage
    repeats the template's pattern (:func:`_storage_proof`): row step index -> template step
    index, then :func:`_storage_proof` 's answer, then the template steps' indices; None
    otherwise."""
    table, columns = layer.table, layer.columns
    n = len(table)
    if not columns or not n:
        return None
    firsts = [index.get(id(t)) for t, _ in columns]
    if None in firsts:
        return None
    at = [list(map(index.get, map(id, made))) for _, made in columns]
    if any(None in c or len(c) != n for c in at):
        return None
    order = sorted(range(len(columns)), key=firsts.__getitem__)
    for a, b in zip(order, order[1:]):  # each row in the template's relative order
        if not all(map(lt, at[a], at[b])):
            return None
    proof = _storage_proof(ctx, table, [t for t, _ in columns])
    if proof is None:
        return None
    copies = {i: firsts[j] for j, column in enumerate(at) for i in column}
    return copies, *proof, firsts  # type: ignore[return-value]


def _storage_proof(ctx: LowerContext, table: Any, steps: Sequence[Step],
                   ) -> tuple[list[int], list[str], set[int]] | None:
    """Whether the storage a table's rows touch repeats what its template's ``steps``
    touch: the addresses held at the own positions of the template and every row (one per
    position and layer: the caller proves them distinct), the shared nodes the steps touch
    and their addresses; None otherwise."""
    where = {t: k for k, t in enumerate(table.template)}
    if any(t.action in WRITES and t.target not in where for t in steps):
        return None  # a write outside the layer: every row would write the same storage
    touched = dict.fromkeys(r for t in steps for r in step_refs(t))
    positions = [where[r] for r in touched if r in where]
    shared = [r for r in touched if r not in where]
    template_ptrs = _addresses(ctx, [table.template[k] for k in positions])
    if template_ptrs is None:
        return None
    first: dict[int, int] = {}
    mine: dict[int, list[int | None]] = {}
    addresses: list[int] = []
    for k, ptr in zip(positions, template_ptrs):
        column = _addresses(ctx, table.column(k))
        if column is None:
            return None
        if ptr is None:
            if any(p is not None for p in column):
                return None
            continue
        mine[k] = column
        same = first.setdefault(ptr, k)
        if same != k:  # the template shares this storage with position `same`: so must rows
            if not all(map(eq, column, mine[same])):
                return None
            continue
        addresses.append(ptr)
        addresses += column  # type: ignore[arg-type] - no None: counted distinct by the caller
    if None in addresses:
        return None
    shared_ptrs = _addresses(ctx, shared)
    if shared_ptrs is None:
        return None
    return addresses, shared, {p for p in shared_ptrs if p is not None}


def _addresses(ctx: LowerContext, refs: list[str]) -> list[int | None] | None:
    """The storage address of each ref's bound tensor (None: nothing bound, or meta); None
    when a bound value is not a tensor (:func:`~derivgraph.compiler.lower_layers.
    column_addresses`: during a compile, what the layer proof read)."""
    return column_addresses(ctx, refs)


def row_keys(ctx: LowerContext, steps: Sequence[Step], layers: Iterable[LayerSteps],
             key: Callable[[LowerContext, Step], Any]) -> list[Any]:
    """``key(ctx, step)`` of every step; a proven row's steps take their template step's key
    (see the module docstring) instead of being keyed one by one."""
    index = {id(s): i for i, s in enumerate(steps)}
    keys: list[Any] = [_UNBOUND] * len(steps)
    for layer in layers:
        for template_step, made in layer.columns:
            at = list(map(index.get, map(id, made)))
            if None in at or not same_key_facts(ctx, layer, template_step, len(made)):
                continue
            value = key(ctx, template_step)
            for i in at:
                keys[i] = value
    return [key(ctx, s) if k is _UNBOUND else k for s, k in zip(steps, keys)]


def same_key_facts(ctx: LowerContext, layer: LayerSteps, step: Step, n: int,
                   written: dict[tuple[int, str], list[Any]] | None = None) -> bool:
    """Whether every row's step gives the template step's group key: the meta values of its
    node operands are the template's (the same objects) and what it writes has the
    template's dtype, shape, device and contiguity (an entry column's storages: its layout
    record, proved where it was made). The meta values are not swept again where the layer
    proof proved them in this very env (:attr:`LayerSteps.metas
    <derivgraph.compiler.lower.LayerSteps.metas>`: every position's, every row's).
    ``written``: where given, the rows' written values read here are kept in it under (the
    table's id, the template step's target), for the caller's emission of the same column."""
    if step.action in _CONSTANT_KEYS:
        return True
    table, env = layer.table, ctx.meta_env
    where = {t: k for k, t in enumerate(table.template)}
    for arg in step.args if layer.metas is not env else ():
        if isinstance(arg, NodeRef) and arg.id in where:
            meta = env.get(arg.id)
            if not all(map(is_, map(env.get, table.column(where[arg.id])), repeat(meta, n))):
                return False
    if step.action is not Action.OUT:
        return True
    if step.target not in where:
        return False
    want = ctx.storage_of(step.target)
    outs = kept_column(ctx, layer.values, where[step.target])  # what the layer proof read
    if outs is None:
        outs = ctx.bound_values(table.column(where[step.target]))  # derived: their storages
    if written is not None:
        written[id(table), step.target] = outs
    if not isinstance(want, torch.Tensor):
        return False
    got = ColumnFacts(outs, book_of(ctx))
    return got.type is type(want) and got.dtype == want.dtype and got.shape == want.shape \
        and got.device == want.device and got.contiguous == want.is_contiguous()
