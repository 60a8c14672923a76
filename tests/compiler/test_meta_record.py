"""Shape inference's record of the closed stamped rows it gave their template's meta values
(:func:`~derivgraph.compiler.infer.rows_hold_metas`): the layer proof skips its meta sweep
only where the record is for the very env, graph version, table, rows list and length and
template values it is asked about; anything else sweeps (the rule)."""

from __future__ import annotations

from typing import Any

import pytest
import torch

from derivgraph import compile_plan
from derivgraph.compiler import infer, lower_layers
from derivgraph.compiler.bind import match_specs
from derivgraph.compiler.build import build_graph
from derivgraph.compiler.graph import DerivedGraph
from derivgraph.compiler.infer import rows_hold_metas
from derivgraph.compiler.layers import closed_layers
from derivgraph.compiler.stamp import stamping
from derivgraph.tools.bench_scaling import scaling_model, scaling_spec


def _graph() -> DerivedGraph:
    with stamping(True):
        return compile_plan(scaling_model(6), [scaling_spec()]).graph


def _metas(graph: DerivedGraph, env: dict[str, Any], table: Any) -> list[Any]:
    return [env.get(n) for n in table.template]


def test_inference_records_the_rows_it_gave_the_templates_values() -> None:
    graph = _graph()
    [table] = closed_layers(graph)
    env = graph.meta_env
    assert rows_hold_metas(graph, env, table, _metas(graph, env, table))
    for row in table.rows:  # what the record says is so
        assert all(env[n] is env[t] for n, t in zip(row, table.template, strict=True))


def test_anything_else_is_not_answered_from_the_record() -> None:
    graph = _graph()
    [table] = closed_layers(graph)
    env = graph.meta_env
    metas = _metas(graph, env, table)
    assert not rows_hold_metas(graph, dict(env), table, metas)  # another env
    assert not rows_hold_metas(graph, env, table, metas[:-1] + [object()])  # other values
    assert not rows_hold_metas(graph, env, table.subset([True] * len(table)), metas)
    table.rows.append(table.rows[-1])  # a longer rows list
    assert not rows_hold_metas(graph, env, table, metas)
    table.rows.pop()
    assert rows_hold_metas(graph, env, table, metas)
    recorded, version, tables = graph.meta_rows
    graph.meta_rows = (recorded, version - 1, tables)  # a record of an older graph
    assert not rows_hold_metas(graph, env, table, metas)


def test_a_table_whose_rows_were_split_is_not_recorded() -> None:
    """A row whose source has another layout is inferred on its own (the table is split):
    the closed table is not in the record, the rows that took the values are."""
    model = scaling_model(6)
    with stamping(True):
        graph = build_graph(model, match_specs(model, [scaling_spec()]))
    graph.nodes["layers.3.scale"].dtype = torch.float64  # planted after building
    [table] = closed_layers(graph)
    table.layouts.clear()  # each row's sources read from its nodes
    interp = infer._StampedMeta(graph, {})
    stamped = infer._run_stamped(graph, interp)
    env = interp.env
    assert env["layers.3.prod"].dtype == torch.float64
    metas = _metas(graph, env, table)
    assert not rows_hold_metas(graph, env, table, metas)
    [kept] = stamped.tables
    assert len(kept.rows) == len(table.rows) - 1
    assert rows_hold_metas(graph, env, kept, metas)


@pytest.mark.parametrize("record", [True, False])
def test_the_compile_proves_the_same_layers_with_or_without_the_record(
        monkeypatch: pytest.MonkeyPatch, record: bool) -> None:
    """The compile's layer proof skips the sweep on the record; without it, the same tables."""
    seen: list[bool] = []
    real = lower_layers._columns_hold

    def spied(*args: Any) -> bool:
        seen.append(args[-1])
        return real(*args)

    monkeypatch.setattr(lower_layers, "_columns_hold", spied)
    if not record:
        monkeypatch.setattr(lower_layers, "rows_hold_metas", lambda *args: False)
    with stamping(True):
        plan = compile_plan(scaling_model(6), [scaling_spec()])
    assert seen == [record]
    assert plan.programs.lowered.layers is not None
    assert [len(layer.table.rows) for layer in plan.programs.lowered.layers] == [5]


def test_a_row_meta_differing_without_a_record_is_swept() -> None:
    """Without the record, a row whose meta value differs fails the column sweep (the rule)."""
    graph = _graph()
    [table] = closed_layers(graph)
    env = graph.meta_env
    metas = _metas(graph, env, table)
    row = table.rows[2]
    env[row[0]] = env[row[0]].clone()  # a write the record's contract rules out
    graph.meta_rows = (None, -1, {})
    assert not rows_hold_metas(graph, env, table, metas)
    assert not lower_layers._columns_hold(_Ctx(graph, env), table, (), metas, (None,) * 8,
                                          None, False)


class _Ctx:
    """The two attributes the meta sweep reads before its facts."""

    def __init__(self, graph: DerivedGraph, env: dict[str, Any]):
        self.graph, self.meta_env = graph, env
