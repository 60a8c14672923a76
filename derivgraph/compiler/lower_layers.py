"""Lowering a stamped layer: its template's steps renamed, when the layer's facts are the same.

The lowering of a node (:class:`~derivgraph.compiler.lower.Lowerer`) reads its graph
neighbourhood (ops, arguments, users, which sources it depends on), meta values, and what is
bound at each node: the storage's type, dtype, shape and contiguity, and which nodes share
storage (``out=`` is refused onto storage the op reads; a copy never reads its own target).
For a closed stamped layer (:func:`~derivgraph.compiler.layers.closed_layers`: the template's
subgraph renamed, nothing else attached) the neighbourhood is the template's by construction;
:func:`provable_layers` checks the rest: every node's meta value is the template's (the same
object), and :func:`layer_facts` of the layer equal the template's (per node: the bound
value's type and layout, and the first node of the layer or its shared constants whose
storage it shares; its type alone for a Python scalar). Such a layer's steps are the
template's renamed; every other layer is lowered node by node.
"""

from __future__ import annotations

from collections.abc import Sequence
from itertools import repeat
from operator import attrgetter, eq, is_
from typing import Any

import numpy as np
import torch

from derivgraph.column_layout import ColumnFacts, book_of
from derivgraph.compiler.infer import rows_hold_metas
from derivgraph.compiler.instances import InstanceTable
from derivgraph.compiler.layers import closed_layers

#: a :class:`~derivgraph.compiler.lower.LowerContext` (not imported: lower imports this module)
LowerContext = Any

__all__ = ["KeptValues", "column_addresses", "kept_column", "layer_facts", "provable_layers",
           "rows_apart"]

class KeptValues:
    """What a layer proof read of a proven table, during a compile: the key under which the
    context's address memo it read under holds, per position of the template whose value is
    a tensor, the rows' bound values (:func:`kept_column`). The memo holds them, not the
    layer (:attr:`~derivgraph.compiler.lower.LayerSteps.values` holds this key only): they
    go with that memo (a new binding or staging, or the compile's end, drops it), so no
    per-row list of the proof, nor the memo's, is kept after the compile for the collector
    to walk. A key is its own object (equal to no other, no tuple of refs)."""

    __slots__ = ()


_UNBOUND = object()
_untyped, _data_ptr = torch.Tensor.untyped_storage, torch.UntypedStorage.data_ptr
_IS_META = attrgetter("is_meta")
_PLAIN = (torch.Tensor, torch.nn.Parameter)  # read in C-level sweeps (:func:`_addresses`)


def _memo(ctx: LowerContext) -> dict[tuple[str, ...], list[int | None] | None] | None:
    """The context's kept addresses during a compile (its layout book set), else None."""
    return getattr(ctx, "address_memo", None) if book_of(ctx) is not None else None


def column_addresses(ctx: LowerContext, refs: Sequence[str], values: list[Any] | None = None,
                     *, tensors: bool = False) -> list[int | None] | None:
    """The storage data address of each ref's bound tensor (None: nothing bound, or meta);
    None when a bound value is not a tensor. ``values``: the refs' bound values
    (:meth:`~derivgraph.compiler.lower.LowerContext.bound_values` with ``_UNBOUND``), when the
    caller read them; ``tensors``: the caller proved each a ``torch.Tensor`` (or
    ``Parameter``) off the meta device.

    During a compile (the context's layout book is set, :func:`book_of`) the answer for one
    run of refs is kept in the context's ``address_memo`` (cleared whenever tensors are bound
    or staged again, :class:`~derivgraph.runtime.storage.BoundTensors`): the lowering's layer
    proof and the schedule's storage fence read the same columns. The list is shared: read
    it, never change it. There, a run of an entry column's storages, or of a source column's
    tensors, whose startup record kept their storage addresses
    (:meth:`~derivgraph.column_layout.ColumnLayouts.addresses`, the very tensors in order;
    :meth:`~derivgraph.column_layout.ColumnLayouts.note_read_addresses` for the sources) is
    answered from it: nothing re-points them during the compile."""
    memo = _memo(ctx)
    key = tuple(refs) if memo is not None else None
    if key is not None:
        kept = memo.get(key, _UNBOUND)
        if kept is not _UNBOUND:
            return kept
    if values is None:
        values = ctx.bound_values(refs, _UNBOUND)
    book = book_of(ctx) if key is not None else None
    noted = book.addresses(values) if book is not None else None
    if noted is not None:  # the book's very list (shared, read only: a copy kept in the
        got: list[int | None] | None = noted  # memo is one more young list of a ref per row)
    else:
        got = list(map(_data_ptr, map(_untyped, values))) if tensors else _addresses(values)
    if key is not None:
        memo[key] = got
    return got


def _addresses(values: list[Any]) -> list[int | None] | None:
    """:func:`column_addresses` of bound ``values`` (``_UNBOUND`` where nothing is bound)."""
    kinds = set(map(type, values))
    if kinds <= set(_PLAIN) and not any(map(_IS_META, values)):
        return list(map(_data_ptr, map(_untyped, values)))
    out: list[int | None] = []
    for value in values:
        if value is _UNBOUND:
            out.append(None)
        elif isinstance(value, torch.Tensor):
            out.append(None if value.is_meta else value.untyped_storage().data_ptr())
        else:
            return None
    return out


def kept_column(ctx: LowerContext, kept: KeptValues | None, k: int) -> list[Any] | None:
    """The bound values of the table's column ``k`` (``ctx.bound_values(table.column(k))``)
    as the layer proof read them (``kept``), where nothing was bound or staged since: the
    context still holds the address memo they were read under (it makes a new one whenever a
    tensor is bound or staged again, :func:`column_addresses`); None otherwise (read them
    again). Every value is a tensor (its template's is), so none is ``missing``. The list is
    shared: read it, never change it."""
    memo: Any = _memo(ctx)
    values = None if kept is None or memo is None else memo.get(kept)
    return None if values is None else values.get(k)


def layer_facts(ctx: LowerContext, ids: tuple[str, ...]) -> tuple[Any, ...]:
    """What the lowering reads of the values bound at ``ids``, position by position: the type
    (and for a tensor its dtype, shape, contiguity, and the first position whose storage it
    shares), None where nothing is bound."""
    first: dict[int, int] = {}
    out: list[Any] = []
    for k, value in enumerate(ctx.bound_values(ids, _UNBOUND)):
        if value is _UNBOUND:
            out.append(None)
        elif isinstance(value, torch.Tensor):
            at = -1 if value.is_meta else first.setdefault(value.untyped_storage().data_ptr(), k)
            out.append((type(value), value.dtype, value.shape, value.is_contiguous(), at))
        else:
            out.append((type(value),))
    return tuple(out)


def provable_layers(ctx: LowerContext, kept: dict[int, KeptValues] | None = None,
                    ) -> list[InstanceTable]:
    """Per template, the table of its closed stamped rows whose meta values and
    :func:`layer_facts` are the template's (the facts taken over the row's nodes, then the
    shared constants its nodes read); their steps are the template's renamed
    (:meth:`~derivgraph.compiler.lower.Step.renamed`).

    A table is checked column by column (each position across every row, a few C-level sweeps
    per fact), the meta values not swept where shape inference recorded giving every row the
    template's (:func:`~derivgraph.compiler.infer.rows_hold_metas`); only when a column
    differs somewhere is each row checked on its own.
    ``kept``: where given, during a compile, a table proven whole keeps under its id the bound
    values its columns read (:class:`KeptValues`, read back by :func:`kept_column`)."""
    graph = ctx.graph
    tables = closed_layers(graph)
    nodes, env = graph.nodes, ctx.meta_env
    proven: list[InstanceTable] = []
    for table in tables:
        template = table.template
        own = set(template)
        shared = tuple(dict.fromkeys(r for n in template for r in nodes[n].inputs
                                     if r not in own))
        metas = [env.get(n) for n in template]
        facts = layer_facts(ctx, template + shared)
        values: dict[int, list[Any]] = {}
        if _columns_hold(ctx, table, shared, metas, facts, values,
                         rows_hold_metas(graph, env, table, metas)):
            proven.append(table)
            memo = _memo(ctx)
            if kept is not None and memo is not None:
                key = kept[id(table)] = KeptValues()
                memo[key] = values  # type: ignore[index] - the memo holds them (KeptValues)
            continue
        keep = [all(map(is_, map(env.get, row), metas))
                and layer_facts(ctx, row + shared) == facts for row in table.rows]
        if any(keep):
            proven.append(table.subset(keep))
    return proven


def _columns_hold(ctx: LowerContext, table: InstanceTable, shared: tuple[str, ...],
                  metas: list[Any], facts: tuple[Any, ...],
                  values_of: dict[int, list[Any]] | None = None,
                  metas_hold: bool = False) -> bool:
    """Whether every row of ``table`` has the template's meta values and facts: each
    position's column of values checked against the template's fact in C-level sweeps, or,
    for an entry column's storages, against its layout record (proved where it was made).
    ``values_of``: where given, the bound values of each of the template's positions whose
    value is a tensor are put in it (every row's a tensor of that type, where this is True).
    A column whose bound values are a recorded column's very tensors, in its order
    (:meth:`~derivgraph.column_layout.ColumnLayouts.held`: one identity sweep), is read as
    the book's own list from then on (its record, its noted addresses and its later readers
    then find that list, not a copy to sweep again).
    ``metas_hold``: shape inference's record says every row has the template's meta values
    (:func:`~derivgraph.compiler.infer.rows_hold_metas`), so their sweep is skipped."""
    env, n, book = ctx.meta_env, len(table), book_of(ctx)
    width = len(table.template)  # the positions after it: a shared node's, in every row
    # the table's own columns (read from the rows once: the schedule and the code generation
    # read the same ones), then each shared node in every row
    columns = [table.column(k) for k in range(width)] + [[s] * n for s in shared]
    if not metas_hold:
        for column, meta in zip(columns, metas):
            if not all(map(is_, map(env.get, column), repeat(meta, n))):
                return False
    ptrs: dict[int, list[int]] = {}  # position -> its storage addresses, layer by layer
    own: list[int] = []  # the positions whose storage is first seen there in the template
    bound: dict[int, list[Any]] = {}  # position -> its bound values, layer by layer
    for k, (column, fact) in enumerate(zip(columns, facts, strict=True)):
        one = k >= width  # one node's value in every row: read once, its facts once
        values = bound[k] = ctx.bound_values(column[:1], _UNBOUND) * n if one \
            else ctx.bound_values(column, _UNBOUND)
        held = book.held(values) if book is not None and not one else None
        if held is not None and type(held[0]) is list:  # a recorded column's very tensors:
            values = bound[k] = held[0]  # its readers below and after find the book's list
        if fact is None:
            if not all(map(is_, values, repeat(_UNBOUND, n))):
                return False
            continue
        got = ColumnFacts(values[:1] if one else values, book)
        if got.type is not fact[0]:
            return False
        if len(fact) == 1:
            continue
        kind, dtype, shape, contiguous, at = fact
        if values_of is not None and not one:
            values_of[k] = values
        if got.dtype != dtype or got.shape != shape or got.contiguous != contiguous \
                or got.is_meta != (at == -1):
            return False
        if at == -1:
            continue
        if at != k and all(map(is_, values, bound[at])):
            memo = _memo(ctx)  # the very tensors of position `at`: its storage, every layer
            if memo is not None:
                memo[tuple(column)] = ptrs[at]
            continue
        mine = ptrs[k] = column_addresses(  # type: ignore[assignment]
            ctx, column[:1] if one else column, values[:1] if one else values,
            tensors=kind in _PLAIN)  # all of that type, none meta
        if one and mine is not None:  # one node's storage in every row: read once
            mine = ptrs[k] = mine * n
        if at != k and not all(map(eq, mine, ptrs[at])):
            return False  # the template shares storage with position `at` here
        if at == k:
            own.append(k)
    # storage the template holds apart is apart in every layer too
    return rows_apart([ptrs[k] for k in own])


def rows_apart(columns: list[list[int | None]]) -> bool:
    """Whether each row's addresses are distinct (``columns``: :func:`column_addresses`'
    answers, one per position, of equal length: the rows are their ``zip``). The columns as
    one array of ``uint64``, each row sorted, no two neighbours equal (C-level); where they
    are no such array (a None, lengths that differ), the rule row by row."""
    if len(columns) < 2:
        return True  # a row of one address (or none) holds nothing twice
    try:
        table = np.array(columns, dtype=np.uint64)
    except (TypeError, ValueError, OverflowError):
        table = None
    if table is None or table.shape != (len(columns), len(columns[0])):
        return all(len(set(row)) == len(columns) for row in zip(*columns))
    table.sort(axis=0)
    return not (table[1:] == table[:-1]).any()
