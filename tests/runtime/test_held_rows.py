"""A compiled plan keeps no entry object per held column row (:meth:`Plan.hold_rows`): the
entry table's ``by_id`` is a :class:`~derivgraph.runtime.entry.HeldRows` that makes a
released row's :class:`~derivgraph.runtime.entry.RowEntry` where a reader asks for it (and
keeps it), from its column's storages, startup addresses and startup record. Canary: every
answer equals, field by field, the plan compiled with the rows kept as objects (the path
before), and a compile, run, refill and run make none of them."""

from __future__ import annotations

import gc
from typing import Any

import pytest
import torch

from derivgraph import compile_plan
from derivgraph.runtime.entry import HeldRows, RowEntry, RowsOf, keeps_startup
from derivgraph.runtime.plan import Plan
from derivgraph.tools.bench_scaling import scaling_model, scaling_spec

LAYERS = 9


def _compile(hold: bool = True, layers: int = LAYERS) -> Plan:
    torch.manual_seed(0)
    model = scaling_model(layers)
    if hold:
        return compile_plan(model, [scaling_spec()])
    keep = Plan.hold_rows
    Plan.hold_rows = lambda self: False  # type: ignore[method-assign]
    try:
        return compile_plan(model, [scaling_spec()])
    finally:
        Plan.hold_rows = keep  # type: ignore[method-assign]


def _alive_rows(plan: Plan) -> int:
    """How many row entries of ``plan``'s held columns are alive (made and kept)."""
    nodes = {id(c.nodes) for c in plan.entries.columns if c.nodes is not None}
    gc.collect()
    return sum(1 for o in gc.get_objects()
               if type(o) is RowEntry and id(RowEntry.column.__get__(o)) in nodes)


def test_a_compile_keeps_no_row_entry() -> None:
    plan = _compile()
    rows = plan.entries.by_id
    assert type(rows) is HeldRows and len(rows) == len(plan.entries) == 4 * LAYERS
    assert plan.tensors.entries is rows and plan.holders.entries is rows
    assert plan.programs.entries is rows and type(plan.holders.table.entries) is RowsOf
    released = [c for c in plan.entries.columns if type(c.entries) is RowsOf]
    assert len(released) == 4 and sum(map(len, released)) == 4 * (LAYERS - 1)
    assert _alive_rows(plan) == 0
    # a run, a refill and a run ask for no row's entry either (their readers take columns)
    reports = [plan.run(), plan.refill(), plan.run()]
    assert _alive_rows(plan) == 0
    kept = _compile(hold=False)
    assert type(kept.entries.by_id) is dict and _alive_rows(kept) == 4 * (LAYERS - 1)
    again = [kept.run(), kept.refill(), kept.run()]
    assert [(r.steps, r.written, r.bytes) for r in reports] == \
        [(r.steps, r.written, r.bytes) for r in again]
    assert reports[0].bytes > 0


def _fields(plan: Plan, key: str) -> tuple[Any, ...]:
    e = plan.entries[key]
    owner = plan.model.get_submodule(e.owner_path)
    alias = e.startup_alias()
    return (type(e).__name__, e.id, e.owner_path, e.slot, e.adopted, e.node.id,
            e.node.decl.name, e.storage.tolist(), e.nbytes(),
            owner.__dict__.get(e.node.decl.name, getattr(owner, e.node.decl.name))
            is e.storage, e.startup_ptr == e.storage.data_ptr(),
            None if alias is None else (alias.tolist(), alias.data_ptr() == e.startup_ptr,
                                        alias is not e.storage))


def test_every_row_answers_as_the_kept_entry_did() -> None:
    held, kept = _compile(), _compile(hold=False)
    assert list(held.entries) == list(kept.entries)
    for key in kept.entries:
        assert _fields(held, key) == _fields(kept, key), key
    assert keeps_startup(held.entries.values()) == keeps_startup(kept.entries.values())
    assert list(held.declared()) == list(kept.declared())


def test_a_row_asked_for_is_one_object_wherever_it_is_read() -> None:
    plan = _compile()
    rows, table = plan.entries.by_id, plan.holders.table
    key = "layers.4.prod"
    assert key in plan.entries and plan.entries.get("layers.99.prod", 7) == 7
    with pytest.raises(KeyError):
        plan.entries["layers.99.prod"]
    entry = plan.entries[key]
    assert plan.entries[key] is entry and rows.get(key) is entry
    at = table.id_list.index(key)
    assert table.entries[at] is entry
    column = next(c for c in plan.entries.columns if key in c.ids)
    assert column.entries[column.ids.index(key)] is entry
    assert rows.storage(key) is entry.storage
    assert table.entries[at:at + 1] == [entry] and len(table.entries) == len(rows)


def test_a_column_whose_row_changed_its_startup_data_stays_kept() -> None:
    plan = _compile(hold=False)
    column = plan.entries.columns[0]
    changed = column.entries[2]
    changed.startup_alias()  # its startup data is now its own alias, not the column's record
    assert plan.hold_rows()
    assert type(column.entries) is list and column.entries[2] is changed
    assert plan.entries[changed.id] is changed
    assert sum(type(c.entries) is RowsOf for c in plan.entries.columns) == 3
    assert not plan.hold_rows()  # held already: nothing changes


def test_a_relayout_after_the_rows_are_held_makes_them_generic() -> None:
    held, kept = _compile(), _compile(hold=False)
    for plan in (held, kept):
        layer = plan.model.layers[3]
        torch.manual_seed(1)
        layer.scale = torch.nn.Parameter(torch.rand(9) + 0.5, requires_grad=False)
        layer.weight = torch.nn.Parameter(torch.rand(9), requires_grad=False)
        plan.run(strict=False)
    assert held.entries.columns == () and type(held.entries.by_id) is HeldRows
    assert held.entries["layers.3.prod"].storage.shape == (9,)
    for key in kept.entries:
        assert _fields(held, key) == _fields(kept, key), key
