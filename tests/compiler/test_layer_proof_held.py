"""The layer proof reads a recorded column once, as the layout book's own list.

During a compile the lowering's layer proof (:func:`derivgraph.compiler.lower_layers._columns_hold`)
reads each of a table's columns from the bound tensors. Where the book holds a column whose
very tensors those are (:meth:`~derivgraph.column_layout.ColumnLayouts.held`: one identity
sweep; an entry column's storages), it keeps the book's list in place of the copy it read, so
that the readers after it (the record of ``ColumnFacts``, the addresses the book noted, the
schedule's group key and the code generation's kept columns) find the very list instead of
sweeping a copy again. Asserted: the kept column is the book's list exactly where the bound
tensors are its tensors (value by value what ``bound_values`` reads), a fresh list elsewhere,
and the pass is the one generated without a book (tensor by tensor). Canary: ``held``
trusting the first tensor and the length (no identity sweep) hands the book's list out for a
column one of whose rows is bound to another tensor: red here.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import torch

from derivgraph import compile_plan
from derivgraph.column_layout import ColumnLayout, ColumnLayouts
from derivgraph.compiler import lower
from derivgraph.compiler.lower import LayerSteps
from derivgraph.compiler.stamp import stamping
from derivgraph.tools.bench_scaling import scaling_model, scaling_spec

LAYERS = 12


def _same(a: Any, b: Any) -> bool:
    return len(a) == len(b) and all(map(lambda x, y: x is y, a, b))


def _plan() -> Any:
    torch.manual_seed(0)
    with stamping(True):
        return compile_plan(scaling_model(LAYERS), [scaling_spec()])


def _book(plan: Any, planted: Any = None) -> tuple[ColumnLayouts, dict[int, Any]]:
    """A book recording every entry column's storages (and their addresses), as the
    compile's entry columns do; ``planted``: a tensor put in place of one row of the first
    column's list (the book then holds a list that is not the bound tensors). By the
    column's first id: the column."""
    book, by_first = ColumnLayouts(), {}
    for i, column in enumerate(plan.entries.columns):
        storages = list(column.storages)
        if i == 0 and planted is not None:
            storages[len(storages) // 2] = planted
        first = storages[0]
        book.add(storages, ColumnLayout(type(first), first.dtype, first.shape, first.device,
                                        True), fresh=True)
        book.note_addresses(storages, list(map(torch.Tensor.data_ptr, storages)))
        by_first[id(column.ids[0])] = (column, storages)
    return book, by_first


@contextmanager
def _layer(plan: Any, book: ColumnLayouts) -> Iterator[tuple[Any, LayerSteps]]:
    ctx = plan.tensors
    ctx.layouts = book
    try:
        (layer,) = lower.lower_steps(ctx).layers
        yield ctx, layer
    finally:
        ctx.layouts = None


def _kept(ctx: Any, layer: LayerSteps, plan: Any, by_first: dict[int, Any]) \
        -> list[tuple[Any, list[Any], list[Any]]]:
    """Per entry column of the layer's table: (the column, the book's list, the kept one)."""
    out = []
    table = layer.table
    for k, ref in enumerate(table.template):
        ids = table.column(k)
        found = next(((c, s) for c, s in by_first.values() if c.ids == ids), None)
        if found is None:
            continue
        got = layer.kept_column_of(ctx, ref)
        assert got is not None
        assert _same(got, ctx.bound_values(ids))  # value by value what the proof reads
        out.append((found[0], found[1], got))
    return out


def test_a_recorded_column_is_kept_as_the_books_list() -> None:
    plan = _plan()
    book, by_first = _book(plan)
    with _layer(plan, book) as (ctx, layer):
        kept = _kept(ctx, layer, plan, by_first)
        assert len(kept) == len(plan.entries.columns) >= 4
        for _, storages, got in kept:
            assert got is storages  # the book's very list: its later readers skip the sweep
            assert book.common(got) is not None and book.addresses(got) is not None


def test_a_column_the_book_holds_with_another_row_is_read_as_bound() -> None:
    plan = _plan()
    planted = torch.zeros_like(plan.entries.columns[0].storages[0])
    book, by_first = _book(plan, planted)
    with _layer(plan, book) as (ctx, layer):
        kept = _kept(ctx, layer, plan, by_first)
        first = plan.entries.columns[0]
        for column, storages, got in kept:
            if column is first:
                assert got is not storages and not any(t is planted for t in got)
                assert _same(got, column.storages)  # the bound tensors, not the book's
            else:
                assert got is storages


def test_the_pass_with_held_columns_is_the_pass_without_a_book() -> None:
    plan = _plan()
    book, _ = _book(plan)
    with _layer(plan, book) as (ctx, layer):
        held_steps = list(layer.steps)
    with _layer(plan, ColumnLayouts()) as (ctx, layer):
        plain_steps = list(layer.steps)
    assert held_steps == plain_steps
