"""The record check of a stamped table (``instances.consistent_rows``, run by
``closed_layers``) reads a run table's derived tensors by column from the stamper's run
(``DerivedGraph.run_nodes``, ``instances.run_column``: the rule shape inference reads them
by too) instead of looking each row's id up, only while the table is that one with that rows
list at that length; its answer is the lookups'. Canaries: a held column that lies (its
nodes' values another row's) is read while the table is the run's, and not read once a row
was added, the rows list replaced, for another table or past the held columns (each
precondition of ``run_column`` dropped turns one case red)."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest

from derivgraph.compiler import build, layers
from derivgraph.compiler.bind import match_specs
from derivgraph.compiler.instances import InstanceTable, consistent_rows, row_recipe, run_column
from derivgraph.compiler.stamp import stamping
from derivgraph.tools.bench_scaling import scaling_model, scaling_spec

_LAYERS = 9


def _graph() -> Any:
    model = scaling_model(_LAYERS)
    with stamping(True):
        return build.build_graph(model, match_specs(model, [scaling_spec()]))


def test_the_graph_holds_the_runs_columns_and_the_check_reads_them() -> None:
    graph = _graph()
    [table] = graph.stamps
    recipe = row_recipe(table, graph.derived)
    assert recipe is not None and len(table) == _LAYERS - 1
    held = [run_column(graph.run_nodes, table, k) for k in range(len(table.template))]
    # the template's four leading derived tensors: held, the very nodes the ids give
    assert [h is not None for h in held] == [True] * 4 + [False] * 4
    for k, column in enumerate(held[:4]):  # held by column (HeldDerived): its nodes
        nodes = column.nodes()
        assert nodes == [graph.derived[row[k]] for row in table.rows]
        assert all(a is b for a, b in zip(nodes, [graph.derived[row[k]] for row in table.rows]))
    assert consistent_rows(table, recipe, graph.derived, graph.run_nodes) == \
        consistent_rows(table, recipe, graph.derived) == [True] * (_LAYERS - 1)


def test_a_wrong_value_is_found_through_the_held_column() -> None:
    graph = _graph()
    [table] = graph.stamps
    recipe = row_recipe(table, graph.derived)
    assert recipe is not None
    graph.derived[table.rows[2][1]].input = table.rows[0][7]  # layer 1's mul as layer 3's prod
    want = [i != 2 for i in range(_LAYERS - 1)]
    assert consistent_rows(table, recipe, graph.derived, graph.run_nodes) == want
    assert consistent_rows(table, recipe, graph.derived) == want


@pytest.mark.parametrize("change", ["none", "row-added", "rows-replaced", "other-table",
                                    "past-the-columns"])
def test_canary_a_lying_column_is_read_only_while_the_table_is_the_runs(change: str) -> None:
    graph = _graph()
    [table] = graph.stamps
    recipe = row_recipe(table, graph.derived)
    assert recipe is not None
    k = 1  # prod: its value is the row's mul (template position 7)
    lying = [SimpleNamespace(input=table.rows[0][7]) for _ in table.rows]  # row 0's mul
    columns = [[graph.derived[row[j]] for row in table.rows] for j in range(4)]
    columns[k] = lying
    if change == "past-the-columns":
        columns = columns[:k]  # the held columns stop before position k
    graph.run_nodes = {id(table): (table, table.rows, len(table.rows), columns)}
    if change == "row-added":
        last = table.rows[-1]
        table.add_row(last, table.prefixes[-1], table.starts[-1])  # a repeat: consistent
    elif change == "rows-replaced":
        table.rows = list(table.rows)
    elif change == "other-table":  # its id taken as the run's (an id reused): the same rows
        run, table = table, InstanceTable(table.template, table.rows, table.base,
                                          table.prefixes, table.starts)
        graph.run_nodes = {id(table): graph.run_nodes[id(run)]}
    got = consistent_rows(table, recipe, graph.derived, graph.run_nodes)
    assert got == consistent_rows(table, recipe, graph.derived) == [True] * len(table) \
        if change != "none" else got == [True] + [False] * (len(table) - 1)


def test_closed_layers_hands_the_graphs_run_tables_to_the_check(
        monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[Any] = []
    check = layers.consistent_rows

    def spied(table: Any, recipe: Any, derived: Any, run_nodes: Any = None,
              row_ids: Any = None) -> Any:
        seen.append((run_nodes, row_ids))
        return check(table, recipe, derived, run_nodes, row_ids)

    monkeypatch.setattr(layers, "consistent_rows", spied)
    graph = _graph()
    assert seen and all(r is graph.run_nodes and i is graph.row_ids for r, i in seen) \
        and graph.run_nodes
