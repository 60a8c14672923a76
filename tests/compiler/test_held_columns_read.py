"""``InstanceTable.column`` hands the held column itself (no copy): every reader of a
stamped table's columns in the compile only reads it. A warm compile of the stamped scaling
model leaves every table's columns as the build made them, value by value and list by list,
and the compiled plan refills as the model's own formulas give. Canary (run as a mutation,
see graph83's NOTES.md): a reader that changes the column it was handed turns the first test
red."""

from __future__ import annotations

from typing import Any

import pytest
import torch

from derivgraph.compiler import build
from derivgraph.compiler.instances import InstanceTable
from derivgraph.compiler.stamp import stamping
from derivgraph.planner import compile_plan
from derivgraph.tools.bench_scaling import scaling_model, scaling_spec

_LAYERS = 40


def test_the_compile_reads_the_held_columns_and_changes_none(
        monkeypatch: pytest.MonkeyPatch) -> None:
    graphs: list[Any] = []
    made = build.build_graph

    def kept(*args: Any) -> Any:
        graph = made(*args)
        graphs.append((graph, [(column, list(column)) for table in graph.stamps
                               for column in table.cols]))
        return graph

    monkeypatch.setattr(build, "build_graph", kept)
    import derivgraph.planner as planner
    monkeypatch.setattr(planner, "build_graph", kept, raising=False)
    model = scaling_model(_LAYERS)
    with stamping(True):
        plan = compile_plan(model, [scaling_spec()])
    [(graph, built)] = graphs
    [table] = graph.stamps
    assert len(table) == _LAYERS - 1
    # as the build made them: the derived tensors' ids, by the rule, every row
    assert table.column(0) == [f"layers.{i}.inv" for i in range(1, _LAYERS)]
    assert table.column(3) == [f"layers.{i}.scale_alias" for i in range(1, _LAYERS)]
    assert all(table.column(k) is table.cols[k] for k in range(len(table.template)))
    # every column the list the build made, holding what the build put in it
    assert [column for column, _ in built] == table.cols
    assert all(column is held for (column, _), held in zip(built, table.cols, strict=True))
    assert all(column == made for column, made in built)
    assert [len(set(column)) for column in table.cols] == [_LAYERS - 1] * len(table.cols)
    for i in range(_LAYERS):
        layer = model.layers[i]
        assert torch.equal(layer.inv, 1.0 / layer.scale)
        assert torch.equal(layer.prod, layer.scale * layer.weight)
        assert layer.scale_alias is layer.scale
    with torch.no_grad():
        model.layers[7].scale.mul_(2.0)
    plan.refill()
    assert torch.equal(model.layers[7].inv, 1.0 / model.layers[7].scale)


def test_an_empty_table_hands_an_empty_column() -> None:
    table = InstanceTable(("a", "b"), ())
    assert table.column(0) == [] and table.column(1) == []
    table.add_rows([("x.a", "x.b"), ("y.a", "y.b")], ["x", "y"], [0, 0])
    assert table.column(1) == ["x.b", "y.b"] and table.column(1) is table.cols[1]
