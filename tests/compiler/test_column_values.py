"""Compile-time values keep the stamped columns as columns
(:class:`derivgraph.compiler.columns.ColumnValues`): a row's value is its column's row. The
columns' readers take a column whole (:func:`~derivgraph.compiler.columns.row_values`,
:meth:`ColumnValues.take`); every per-id read answers what the dict holding every row by id
answered (the kept columns put in first), so a reader by id reads what it read before."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest
import torch

import derivgraph.compiler.columns as columns
import derivgraph.planner as planner
from derivgraph.adoption_columns import allocated_rows
from derivgraph.compare import bits_equal
from derivgraph.compiler.layers import closed_layers
from derivgraph.compiler.stamp import stamping
from derivgraph.tools.bench_scaling import scaling_model, scaling_spec

ColumnValues = columns.ColumnValues
_A, _B = ["a0", "a1", "a2"], ["b0", "b1"]
_VA, _VB = (torch.tensor([1.0]), torch.tensor([-0.0]), torch.tensor([float("nan")])), [7, 8]


def _kept() -> tuple[ColumnValues, dict[str, Any]]:
    """A ColumnValues with two plain keys and two kept columns, and the dict it stands for
    (the old env: the plain keys, then each column's rows by id)."""
    env = ColumnValues({"x": 1, "y": None})
    env.keep(_A, _VA)
    env.keep(_B, _VB)
    want = {"x": 1, "y": None, **dict(zip(_A, _VA)), **dict(zip(_B, _VB))}
    return env, want


_READS = {
    "getitem": lambda d: [d[k] for k in ("x", "a1", "b1")],
    "get": lambda d: [d.get(k) for k in ("x", "a2", "b0", "zz")] + [d.get("zz", 5)],
    "contains": lambda d: ["a0" in d, "b1" in d, "zz" in d, "y" in d],
    "len": len,
    "iter": lambda d: sorted(d),
    "keys": lambda d: sorted(d.keys()),
    "items": lambda d: sorted(d.items(), key=lambda kv: kv[0]),
    "values": lambda d: sorted(map(id, d.values())),
    "copy": lambda d: d.copy(),
    "dict": dict,
    "eq": lambda d: d == {"x": 1},
}


@pytest.mark.parametrize("read", sorted(_READS))
def test_every_per_id_read_answers_as_the_dict_of_every_row(read: str) -> None:
    env, want = _kept()
    got, expected = _READS[read](env), _READS[read](want)
    if read in ("copy", "dict"):
        assert type(got) is dict and got.keys() == expected.keys()
        assert all(got[k] is expected[k] for k in expected)
    else:
        assert got == expected or (read == "getitem" and all(map(bits_equal, got, expected)))


def test_a_kept_rows_value_is_the_very_object_and_a_miss_still_raises() -> None:
    env, want = _kept()
    assert all(env[k] is v for k, v in want.items())
    with pytest.raises(KeyError):
        env["zz"]  # noqa: B018
    assert ColumnValues().get("zz", 3) == 3 and "zz" not in ColumnValues()


def test_rows_answers_the_very_column_only() -> None:
    env, _ = _kept()
    assert env.rows(list(_A)) is _VA and env.rows(list(_B)) is _VB
    assert env.rows(["a0", "a1"]) is None and env.rows(["a0", "a1", "zz"]) is None
    assert env.rows(["a1", "a2"]) is None and env.rows([]) is None
    assert dict.__len__(env) == 2  # nothing put in the dict by reading the columns
    assert columns.row_values(env, list(_A)) == list(_VA)
    assert columns.row_values({"a0": 1, "a1": 2}, ["a1", "a0"]) == [2, 1]  # a plain dict


def test_take_puts_in_only_the_columns_it_reads() -> None:
    env, want = _kept()
    got = env.take(["x", "a0", "a1", "a2"])
    assert got[0] == 1 and all(a is b for a, b in zip(got[1:], _VA, strict=True))
    assert dict.__len__(env) == 5  # the b column is still kept only
    assert env.take(["b1", "zz"]) == [8, None]  # a column's later row alone: all put in
    assert dict.__len__(env) == len(want)
    env, want = _kept()
    assert env.take(["zz", "x"]) == [None, 1]  # a miss: every column put in, as the dict
    assert dict.__len__(env) == len(want)


def test_fill_derived_keeps_a_derived_column_as_its_input_column() -> None:
    table = closed_layers(_graph(8))[0]
    nodes = _graph.graph.nodes  # type: ignore[attr-defined]
    k = next(i for i, t in enumerate(table.template)
             if nodes[t].kind is columns._OP and nodes[t].op == "div")
    values = tuple(torch.full((8,), float(i)) for i in range(len(table)))
    env = ColumnValues()
    env.keep(table.column(k), values)
    env["shared"] = torch.zeros(1)
    columns.fill_derived([(table, 0, k, "unused"), (table, 1, None, "shared")], env)
    assert env.rows(table.column(0)) is values  # the same column, not copied
    assert all(v is env["shared"] for v in env.rows(table.column(1)) or ())
    assert [env[i] for i in table.column(0)] == list(values)


def _graph(layers: int) -> Any:
    from derivgraph.compiler.bind import match_specs
    from derivgraph.compiler.build import build_graph

    torch.manual_seed(0)
    model = scaling_model(layers)
    with stamping(True):
        graph = build_graph(model, match_specs(model, [scaling_spec()]))
    _graph.graph = graph  # type: ignore[attr-defined]
    return graph


def test_a_shared_operand_kept_in_another_column_is_read() -> None:
    """A column whose shared operand (no row's own node, not a source) is a kept row of
    another column reads it as the dict of every row would (the columns put in), so the
    column is evaluated as before."""
    graph = _graph(12)
    table = closed_layers(graph)[0]
    nodes = graph.nodes
    where = {t: i for i, t in enumerate(table.template)}
    kdiv = next(i for i, t in enumerate(table.template)
                if nodes[t].kind is columns._OP and nodes[t].op == "div")
    mul = next(nodes[t] for t in table.template
               if nodes[t].kind is columns._OP and nodes[t].op == "mul")
    scale = next(a for a in mul.args if type(a) is columns.NodeRef)
    with torch.no_grad():
        interp = planner.CompileValues(graph)
        env = interp.env = ColumnValues()
        assert columns.evaluate_columns(graph, env, interp.source_at) == 2
        shared = table.column(kdiv)[3]  # another column's row: kept, not in the dict
        assert not dict.__contains__(env, shared)
        first = dataclasses.replace(mul, args=(columns.NodeRef(shared), scale))
        column = table.column(where[mul.id])
        got = columns._column(graph, env, interp.source_at, table, where, first, column)
    assert got is not None
    sources = table.column(where[scale.id])
    for value, src in zip(got, sources):
        assert bits_equal(value, env[shared] * env[src])


def test_the_compile_keeps_the_rows_out_of_the_dict(monkeypatch: pytest.MonkeyPatch) -> None:
    """At the scaling workload no reader reads a stamped row by id: the columns stay kept
    through the whole compile; adoption's extras are the kept values themselves."""
    fills: list[int] = []
    real = ColumnValues.fill

    def spy(self: ColumnValues) -> None:
        fills.append(len(self._pending))
        real(self)

    monkeypatch.setattr(ColumnValues, "fill", spy)
    with stamping(True):
        planner.compile_plan(scaling_model(40), [scaling_spec()])
        plan, values, _, _ = planner._prepare(scaling_model(40), [scaling_spec()], False, True)
    assert not any(fills)  # no per-id read of a kept row
    assert type(values) is ColumnValues
    rows = ["layers.5.scale", "layers.5.weight"]  # the rows' sources the columns read: kept
    assert not any(map(dict.__contains__, [values] * 2, rows))
    assert values.rows(rows[:1]) is None
    layer = plan.model.layers[5]
    assert values.get(rows[0]) is layer.scale and values.get(rows[1]) is layer.weight
    values = planner._prepare(scaling_model(40), [scaling_spec()], False, True)[1]
    rows = sum(len(t) * len(t.template) for t in closed_layers(plan.graph))
    before = dict.__len__(values)
    assert before < len(plan.graph.nodes) and rows > 0
    taken = allocated_rows(plan.graph, values, plan_reader(plan), lambda kind: None)
    assert len(taken) == 3 and dict.__len__(values) == before
    monkeypatch.undo()
    for column in taken:
        assert all(x is values[i] for i, x in zip(column.ids, column.extras))
    assert dict.__len__(values) > before  # the per-id reads put the columns in


def plan_reader(plan: Any) -> Any:
    from derivgraph.compiler.owners import PathReader

    return PathReader(plan.model)
