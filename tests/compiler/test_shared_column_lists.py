"""The entry columns of held columns keep the graph's own per-row lists (the held column's
ids and owner paths) and one list of owners per table, not copies: every per-row list a
plan keeps is walked by the collector's first young collection after the compile (about
13 ns a reference at 100k, where the plan's objects themselves cost little), so a copy
costs twice (made, then walked). Canary: the values are the rows' own (each column's ids,
paths and owners equal, row by row, those read from the model independently), the lists
are the very objects named, and the compiled plan still refills to eager's values."""

from __future__ import annotations

from typing import Any

import torch

from derivgraph import compile_plan
from derivgraph.compiler.graph import HeldDerived
from derivgraph.runtime.entry import ColumnRows
from derivgraph.runtime.entry_columns import AliasColumn
from derivgraph.tools.bench_scaling import scaling_model, scaling_spec
from tests.fixtures.scaling_refill import assert_refill_matches_eager

LAYERS = 12


def _owner(model: Any, path: str) -> Any:
    return model.get_submodule(path) if path else model


def test_held_columns_keep_the_graphs_lists() -> None:
    torch.manual_seed(0)
    model = scaling_model(LAYERS)
    plan = compile_plan(model, [scaling_spec()])
    held = [c for c in plan.entries.columns if type(c.nodes) is HeldDerived]
    # the three allocated columns and the alias column, each of the 11 stamped rows
    assert len(held) == 4
    assert sum(type(c) is AliasColumn for c in held) == 1
    assert all(type(c.entries) is ColumnRows for c in held)
    expected_paths = [f"layers.{i}" for i in range(1, LAYERS)]
    owners = held[0].owners
    for column in held:
        name = column.ids[0].rsplit(".", 1)[1]
        # real values, read independently of the compile
        assert column.ids == [f"layers.{i}.{name}" for i in range(1, LAYERS)]
        assert column.paths == expected_paths
        assert len(column.owners) == LAYERS - 1
        assert all(o is _owner(model, p) for o, p in zip(column.owners, expected_paths))
        # the very lists: the held column's ids and paths, one owners list for the table
        assert column.ids is column.nodes.ids
        assert column.paths is column.nodes.paths
        assert column.owners is owners
    # the plan the compile made is a working one: after a source changes in place, a refill
    # gives eager's values on every layer
    assert_refill_matches_eager(model, plan, LAYERS, 1.5, alias=True)
