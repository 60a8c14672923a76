"""Shape inference keeps the stamped rows' meta values aside (``infer._MetaEnv``, a
:class:`~derivgraph.compiler.row_deps.KeptAside`): no compile, run or refill reads a row's,
so none is put in the env; the first read of one (or of the whole) puts them all in, with the
values the eager env held (each row's the template's), and a write puts them in first."""

from __future__ import annotations

from typing import Any

import torch

from derivgraph import compile_plan
from derivgraph.compiler import columns
from derivgraph.compiler.layers import closed_layers
from derivgraph.compiler.row_deps import KeptAside
from derivgraph.compiler.stamp import stamping
from derivgraph.tools.bench_scaling import scaling_model, scaling_spec
from tests.compiler.test_row_deps import run_reload_refill


def _compiled(layers: int = 6) -> tuple[Any, Any]:
    model = scaling_model(layers)
    with stamping(True):
        return model, compile_plan(model, [scaling_spec()])


def test_no_row_meta_is_put_in_by_the_compile_a_run_or_a_refill() -> None:
    model, plan = _compiled()
    env = plan.meta_env
    assert isinstance(env, KeptAside) and env.pending
    [table] = closed_layers(plan.graph)
    assert all(dict.__contains__(env, t) for t in table.template)
    assert not any(dict.__contains__(env, n) for row in table.rows for n in row)
    run_reload_refill(plan, model)
    assert env.pending
    assert env.get(table.template[1]) is dict.__getitem__(env, table.template[1])
    assert env.pending  # a key that is in: answered, nothing put in


def test_a_row_read_puts_every_row_in_with_its_templates_value() -> None:
    _, plan = _compiled()
    env = plan.meta_env
    [table] = closed_layers(plan.graph)
    assert env["layers.3.prod"] is env["layers.0.prod"]  # a row's key: all put in
    assert not env.pending
    for row in table.rows:
        assert all(env[n] is env[t] for n, t in zip(row, table.template, strict=True))
    assert len(env) == len(plan.graph.nodes)


def test_a_write_puts_the_rows_in_first() -> None:
    _, plan = _compiled()
    env = plan.meta_env
    written = torch.empty(3, device="meta")
    env["layers.3.prod"] = written
    assert not env.pending
    len(env)
    assert env["layers.3.prod"] is written  # not overwritten by the rows' values


def test_the_column_evaluation_reads_the_templates_meta_where_inference_recorded_it(
        monkeypatch: Any) -> None:
    """A column's meta value is its template's where shape inference recorded every row
    having it (no row's read: the env keeps them aside); anything else reads the row's."""
    _, plan = _compiled()
    graph = plan.graph
    env = graph.meta_env
    [table] = closed_layers(graph)
    k = table.template.index("layers.0.prod")
    column = table.column(k)
    assert env.pending
    assert columns._row_meta(graph, table, table.template[k], column[0]) \
        is dict.__getitem__(env, "layers.0.prod")
    assert env.pending  # answered from the template
    own = torch.empty(7, device="meta")
    env[column[0]] = own  # the row's own value differs: the record is no longer the env's
    recorded, version, tables = graph.meta_rows
    graph.meta_rows = (recorded, version - 1, tables)  # (as after the graph changed)
    assert columns._row_meta(graph, table, table.template[k], column[0]) is own
