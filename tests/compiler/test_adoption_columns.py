"""Stamped rows whose derived tensors are simply allocated take that branch a column at a time
(:mod:`derivgraph.adoption_columns`); a row whose owner already holds a tensor at the name is
adopted on its own, as without the shortcut, and :func:`~derivgraph.paths.absent_on_modules`
says MISSING only where :func:`~derivgraph.paths.step_into` does. The alias column's guards
each go red when planted away: a row whose value is MISSING, a meta storage, a target that is
a planned entry."""

from __future__ import annotations

import pytest
import torch
from torch import nn

import derivgraph.adoption as adoption
from derivgraph import compile_plan
from derivgraph.adoption_columns import alias_rows, allocated_rows
from derivgraph.compiler.layers import closed_layers
from derivgraph.compiler.owners import PathReader
from derivgraph.compiler.stamp import stamping
from derivgraph.paths import MISSING, absent_on_modules, step_into
from derivgraph.planner import _prepare
from derivgraph.runtime.entry import Entry
from derivgraph.tools.bench_scaling import scaling_model, scaling_spec


def _by_id(columns: list) -> dict:
    """The taken columns' rows by id: each row's (entry, extra)."""
    return {i: row for c in columns for i, row in zip(c.ids, zip(c.entries, c.extras))}


def _planned(plan, values: dict, model: nn.Module, columns: bool) -> list:  # noqa: ANN001
    """adopt_or_allocate's plan, with the column shortcut or without it (every row one by
    one)."""
    if columns:
        return adoption.adopt_or_allocate(plan, values, PathReader(model))
    real = adoption.allocated_rows, adoption.alias_rows
    adoption.allocated_rows = adoption.alias_rows = lambda *args: []
    try:
        return adoption.adopt_or_allocate(plan, values, PathReader(model))
    finally:
        adoption.allocated_rows, adoption.alias_rows = real


def _facts(planned: list) -> list[tuple]:
    return [(e.id, e.storage, e.slot, e.adopted, type(x).__name__,
             x.data_ptr() if isinstance(x, torch.Tensor) else x) for e, x in planned]


def test_rows_are_allocated_a_column_at_a_time_as_one_by_one() -> None:
    model = scaling_model(5)
    with stamping(True):
        plan, values, _, _ = _prepare(model, [scaling_spec()], False, True)
        rows = _by_id(allocated_rows(plan.graph, values, PathReader(model), adoption._slot))
        assert sorted(rows) == sorted(f"layers.{i}.{n}" for i in range(1, 5)
                                      for n in ("inv", "prod", "strides"))  # not the alias
        shortcut, one_by_one = (_planned(plan, values, model, on) for on in (True, False))
    assert _facts(shortcut) == _facts(one_by_one)
    assert sum(isinstance(x, torch.Tensor) for _, x in shortcut) == 15  # allocated: 3 a layer


def _with_derived_alias() -> object:
    """The scaling spec with one more alias, of the derived ``inv``."""
    from derivgraph import DerivedTensor

    spec = scaling_spec()
    return spec.model_copy(update={"derived": [
        *spec.derived, DerivedTensor(name="inv_alias", kind="alias", of="inv")]})


def test_aliases_of_sources_are_planned_a_column_at_a_time_as_one_by_one() -> None:
    """The alias of a source takes the column; the alias of a derived tensor (its target's
    storage, once it has one) does not; the plan is the one-by-one plan."""
    model = scaling_model(5)
    with stamping(True):
        plan, values, _, _ = _prepare(model, [_with_derived_alias()], False, True)
        rows = _by_id(alias_rows(plan.graph, values, PathReader(model), adoption.AliasOf))
        assert sorted(rows) == [f"layers.{i}.scale_alias" for i in range(1, 5)]
        for i in range(1, 5):
            entry, extra = rows[f"layers.{i}.scale_alias"]
            assert entry.storage is model.layers[i].scale and not entry.adopted
            assert extra == adoption.AliasOf(f"layers.{i}.scale")
        shortcut, one_by_one = (_planned(plan, values, model, on) for on in (True, False))
    assert _facts(shortcut) == _facts(one_by_one)


def test_a_column_with_a_missing_value_is_planned_one_by_one() -> None:
    """A row whose value reads MISSING (adoption would compare ``current is target``) keeps
    its whole column off the shortcut; the plan is still the one-by-one plan."""
    model = scaling_model(5)
    with stamping(True):
        plan, values, _, _ = _prepare(model, [scaling_spec()], False, True)
        assert len(_by_id(alias_rows(plan.graph, values, PathReader(model), adoption.AliasOf))) == 4
        values["layers.2.scale_alias"] = MISSING
        assert _by_id(alias_rows(plan.graph, values, PathReader(model), adoption.AliasOf)) == {}


def _alias_column_rows() -> tuple[nn.Module, list]:
    """The alias column's rows (entry, extra) as adopt_or_allocate plans them (scaling, 5
    layers: rows 1-4 stamped)."""
    model = scaling_model(5)
    with stamping(True):
        plan, values, _, _ = _prepare(model, [scaling_spec()], False, True)
        planned = _planned(plan, values, model, True)
    return model, [(e, x) for e, x in planned if e.id.endswith("scale_alias")]


def test_the_alias_column_refuses_a_meta_storage_or_a_planned_target() -> None:
    """``_unplanned_aliases`` keeps a column only where every storage is a tensor on no meta
    device and no row's target is a planned entry: one row planted each way is refused."""
    from derivgraph.runtime.entry_columns import _unplanned_aliases

    _, rows = _alias_column_rows()
    assert len(rows) == 5 and _unplanned_aliases(rows, "scale_alias", {})
    entry, extra = rows[2]
    meta = torch.empty(entry.storage.shape, device="meta")
    moved = Entry(entry.node, meta, entry.slot, entry.adopted)
    planted = [*rows[:2], (moved, extra), *rows[3:]]
    assert not _unplanned_aliases(planted, "scale_alias", {})
    assert not _unplanned_aliases(rows, "scale_alias", {extra.target: rows[2]})
    assert not _unplanned_aliases(rows, "other_name", {})


def test_a_row_whose_owner_holds_the_alias_name_is_planned_one_by_one() -> None:
    model = scaling_model(5)
    model.layers[3].__dict__["scale_alias"] = model.layers[3].scale
    with stamping(True):
        plan, values, _, _ = _prepare(model, [scaling_spec()], False, True)
        assert _by_id(alias_rows(plan.graph, values, PathReader(model), adoption.AliasOf)) == {}
        shortcut, one_by_one = (_planned(plan, values, model, on) for on in (True, False))
    assert _facts(shortcut) == _facts(one_by_one)
    assert [e.adopted for e, _ in shortcut if e.id.endswith("alias")] == \
        [False, False, False, True, False]


def test_a_row_whose_owner_holds_the_tensor_adopts_it() -> None:
    model = scaling_model(5)
    held = model.layers[2].inv = 1.0 / model.layers[2].scale.detach().clone()
    with stamping(True):
        plan, values, _, _ = _prepare(model, [scaling_spec()], False, True)
        assert any("layers.2.inv" in row for t in closed_layers(plan.graph) for row in t.rows)
        rows = _by_id(allocated_rows(plan.graph, values, PathReader(model), adoption._slot))
        assert "layers.2.inv" not in rows and "layers.3.inv" not in rows  # its column: one by one
        assert "layers.3.prod" in rows
        shortcut, one_by_one = (_planned(plan, values, model, on) for on in (True, False))
        compiled = compile_plan(model, [scaling_spec()])
    assert _facts(shortcut) == _facts(one_by_one)
    entry = compiled.entries["layers.2.inv"]
    assert entry.adopted and entry.storage is held
    assert not compiled.entries["layers.3.inv"].adopted


class _Plain(nn.Module):
    pass


class _WithClassAttr(nn.Module):
    inv = torch.zeros(1)


def _holding(where: str) -> nn.Module:
    module = _Plain()
    if where == "parameter":
        module.inv = nn.Parameter(torch.zeros(1))
    elif where == "buffer":
        module.register_buffer("inv", torch.zeros(1))
    elif where == "module":
        module.inv = nn.Linear(1, 1)
    elif where == "dict":
        module.__dict__["inv"] = 1.0
    elif where == "class":
        module = _WithClassAttr()
    return module


@pytest.mark.parametrize("where", ["parameter", "buffer", "module", "dict", "class"])
def test_absent_on_modules_is_false_where_one_holds_the_name(where: str) -> None:
    owners = [_Plain(), _holding(where), _Plain()]
    assert step_into(owners[1], "inv") is not MISSING
    assert not absent_on_modules(owners, "inv")


def test_absent_on_modules_is_step_into_missing() -> None:
    owners = [_Plain(), _Plain()]
    assert absent_on_modules(owners, "inv")
    assert all(step_into(o, "inv") is MISSING for o in owners)
    assert not absent_on_modules([_Plain(), object()], "inv")  # not a module: not proven
    assert not absent_on_modules(owners, "0")  # an index: another branch of step_into


def test_a_row_of_another_declaration_leaves_its_column_one_by_one() -> None:
    model = scaling_model(4)
    with stamping(True):
        plan, values, _, _ = _prepare(model, [scaling_spec()], False, True)
    node = plan.graph.derived["layers.3.prod"]
    node.decl = node.decl.model_copy(update={"kind": "engine"})  # another declaration object
    rows = _by_id(allocated_rows(plan.graph, values, PathReader(model), adoption._slot))
    assert not any(r.endswith(".prod") for r in rows) and "layers.3.inv" in rows
