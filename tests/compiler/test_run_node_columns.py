"""Shape inference reads a stamped table's derived tensors by column from the stamper's run
(``Stamper.run_nodes``: a table whose rows are all one run's, with each row's derived tensor
per leading template position) instead of looking each row's id up, only while the table is
that one with that rows list at that length; the nodes, their meta values and devices, and
the issues are what the lookups give. Canaries (see the helper's NOTES): the length check
dropped; one column handed for every position."""

from __future__ import annotations

from typing import Any

import pytest
import torch
from torch import nn

from derivgraph.compiler import build, infer
from derivgraph.compiler.bind import match_specs
from derivgraph.compiler.infer import _Stamped
from derivgraph.compiler.instances import InstanceTable
from derivgraph.compiler.stamp import stamping
from derivgraph.tools.bench_scaling import scaling_model, scaling_spec

_ROWS = [("a.0.x", "a.0.y", "%1:neg"), ("a.1.x", "a.1.y", "%2:neg")]


def _table() -> tuple[InstanceTable, dict[str, Any], list[list[Any]]]:
    table = InstanceTable(("t.x", "t.y", "%0:neg"), list(_ROWS))
    derived = {i: object() for row in _ROWS for i in row[:2]}
    held = [[derived[row[k]] for row in _ROWS] for k in range(2)]
    return table, derived, held


@pytest.mark.parametrize("change", ["none", "row-added", "rows-replaced", "other-table",
                                    "past-the-columns"])
def test_the_held_column_only_while_the_table_is_the_runs(change: str) -> None:
    table, derived, held = _table()
    stamped = _Stamped(run_nodes={id(table): (table, table.rows, len(table.rows), held)})
    k = 2 if change == "past-the-columns" else 1
    if change == "row-added":
        table.add_row(("a.2.x", "a.2.y", "%3:neg"), "a.2", 2)
        derived |= {"a.2.x": object(), "a.2.y": object()}
    elif change == "rows-replaced":
        table.rows = list(table.rows)
    elif change == "other-table":
        table = InstanceTable(table.template, table.rows)
    elif change == "past-the-columns":
        derived |= {row[2]: object() for row in table.rows}
    got = stamped.derived_column(table, k, derived)
    assert got == [derived[row[k]] for row in table.rows]
    assert any(got is column for column in held) is (change == "none")


def _record(graph: Any) -> list[Any]:
    return [[(n.id, n.meta, n.device, n.input) for n in graph.derived.values()],
            [(i.rule, i.message) for i in graph.issues]]


def _split() -> Any:
    """Layer 3 of another width (its own params): rows 1-2, then 4-5, two runs of one
    template and one table (the second run's rows added after the first's)."""
    model = scaling_model(6)
    layer = model.layers[3]
    layer.scale = nn.Parameter(torch.rand(4) + 0.5, requires_grad=False)
    layer.weight = nn.Parameter(torch.rand(4), requires_grad=False)
    return model


@pytest.mark.parametrize("case", ["one-run", "two-runs", "one-table-two-runs"])
def test_inference_by_held_columns_is_what_lookups_give(case: str,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    model = {"one-run": lambda: scaling_model(6),
             "two-runs": lambda: nn.Sequential(scaling_model(4), scaling_model(3)),
             "one-table-two-runs": _split}[case]()
    real, taken = infer.infer_shapes, []
    column = _Stamped.derived_column

    def spied(self: _Stamped, table: Any, k: int, derived: Any) -> Any:
        got = column(self, table, k, derived)
        held = self.run_nodes.get(id(table))
        taken.append(held is not None and got is held[3][k])
        return got

    with stamping(True), monkeypatch.context() as patch:
        patch.setattr(_Stamped, "derived_column", spied)
        mine = _record(build.build_graph(model, match_specs(model, [scaling_spec()])))
        held, taken[:] = list(taken), []
        patch.setattr(build, "infer_shapes", lambda g, t=None, r=None: real(g, t, None))
        rows = _record(build.build_graph(model, match_specs(model, [scaling_spec()])))
    assert mine == rows and all(m is not None for _, m, _, _ in mine[0])
    assert held and not any(taken)  # per table: its 4 positions' metas, then the budgets
    # the split table's rows are two runs' (the second's added after the first's): looked up
    assert held == ([False] * 5 if case == "one-table-two-runs" else [True] * len(held))
