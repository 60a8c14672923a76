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

from itertools import repeat
from operator import eq, is_
from typing import Any

import torch

from derivgraph.column_layout import ColumnFacts, book_of
from derivgraph.compiler.instances import InstanceTable
from derivgraph.compiler.layers import closed_layers

#: a :class:`~derivgraph.compiler.lower.LowerContext` (not imported: lower imports this module)
LowerContext = Any

__all__ = ["layer_facts", "provable_layers"]


_UNBOUND = object()
_untyped, _data_ptr = torch.Tensor.untyped_storage, torch.UntypedStorage.data_ptr


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


def provable_layers(ctx: LowerContext) -> list[InstanceTable]:
    """Per template, the table of its closed stamped rows whose meta values and
    :func:`layer_facts` are the template's (the facts taken over the row's nodes, then the
    shared constants its nodes read); their steps are the template's renamed
    (:meth:`~derivgraph.compiler.lower.Step.renamed`).

    A table is checked column by column (each position across every row, a few C-level sweeps
    per fact); only when a column differs somewhere is each row checked on its own."""
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
        if _columns_hold(ctx, table, shared, metas, facts):
            proven.append(table)
            continue
        keep = [all(map(is_, map(env.get, row), metas))
                and layer_facts(ctx, row + shared) == facts for row in table.rows]
        if any(keep):
            proven.append(table.subset(keep))
    return proven


def _columns_hold(ctx: LowerContext, table: InstanceTable, shared: tuple[str, ...],
                  metas: list[Any], facts: tuple[Any, ...]) -> bool:
    """Whether every row of ``table`` has the template's meta values and facts: each
    position's column of values checked against the template's fact in C-level sweeps, or,
    for an entry column's storages, against its layout record (proved where it was made)."""
    env, n, book = ctx.meta_env, len(table), book_of(ctx)
    columns = list(zip(*table.rows)) + [(s,) * n for s in shared]
    for column, meta in zip(columns, metas):
        if not all(map(is_, map(env.get, column), repeat(meta, n))):
            return False
    ptrs: dict[int, list[int]] = {}  # position -> its storage addresses, layer by layer
    own: list[int] = []  # the positions whose storage is first seen there in the template
    for k, (column, fact) in enumerate(zip(columns, facts, strict=True)):
        values = ctx.bound_values(column, _UNBOUND)
        if fact is None:
            if not all(map(is_, values, repeat(_UNBOUND, n))):
                return False
            continue
        got = ColumnFacts(values, book)
        if got.type is not fact[0]:
            return False
        if len(fact) == 1:
            continue
        kind, dtype, shape, contiguous, at = fact
        if got.dtype != dtype or got.shape != shape or got.contiguous != contiguous \
                or got.is_meta != (at == -1):
            return False
        if at == -1:
            continue
        mine = ptrs[k] = list(map(_data_ptr, map(_untyped, values)))
        if at != k and not all(map(eq, mine, ptrs[at])):
            return False  # the template shares storage with position `at` here
        if at == k:
            own.append(k)
    # storage the template holds apart is apart in every layer too
    return all(len(set(row)) == len(own) for row in zip(*(ptrs[k] for k in own)))
