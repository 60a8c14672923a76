"""Evaluation's column proof handed to the derived columns (``FilledColumns``).

``evaluate_columns`` records, per table, the template positions whose every row it put in
the env (each evaluated op column and its operand columns); ``derived_columns`` does not
sweep those again for their presence. Asserted: every recorded position's rows are in the
env when recorded, the derived tensors' positions are never recorded (they have no value
yet), a record of another table object is not taken, and an unrecorded position missing a
row still refuses the columns. Canary: every template position recorded as filled makes the
first test go red (the derived positions' rows are not in the env).
"""

from __future__ import annotations

from typing import Any

import pytest

import derivgraph.compiler.columns as columns
import derivgraph.planner as planner
from derivgraph.compiler.layers import closed_layers
from derivgraph.compiler.stamp import stamping
from derivgraph.tools.bench_scaling import scaling_model, scaling_spec
from tests.compiler.scaling_variants import spec_with_generic_rows


def _recorded(monkeypatch: pytest.MonkeyPatch, spec: Any) -> tuple[Any, list[Any]]:
    """Prepare a compile (stamping on); the graph and, for each ``evaluate_columns`` call,
    the filled record and a copy of the env right after it."""
    seen: list[Any] = []
    real = columns.evaluate_columns

    def spy(graph: Any, env: dict[str, Any], read: Any, book: Any = None,
            filled: Any = None, sources: Any = None) -> int:
        done = real(graph, env, read, book, filled, sources)
        seen.append((filled, dict(env)))
        return done

    monkeypatch.setattr(planner, "evaluate_columns", spy)
    with stamping(True):
        plan, _, _, _ = planner._prepare(scaling_model(24), [spec()], False, True)
    return plan.graph, seen


@pytest.mark.parametrize("spec", [scaling_spec, spec_with_generic_rows])
def test_recorded_positions_are_in_the_env(monkeypatch: pytest.MonkeyPatch,
                                           spec: Any) -> None:
    graph, seen = _recorded(monkeypatch, spec)
    assert len(seen) == 1
    filled, env = seen[0]
    tables = closed_layers(graph)
    assert filled and {id(t) for t in tables} >= set(filled)
    for table, at in filled.values():
        assert at and table in tables
        for k in at:
            assert table.template[k] not in graph.derived
            assert all(row[k] in env for row in table.rows)
    if spec is scaling_spec:  # its two op columns and their two source columns
        (_, at), = filled.values()
        assert len(at) == 4


def test_a_record_is_taken_for_its_own_table_only(monkeypatch: pytest.MonkeyPatch) -> None:
    graph, seen = _recorded(monkeypatch, scaling_spec)
    filled, env = seen[0]
    (table, at), = filled.values()
    k = min(at)
    missing = dict(env)
    del missing[table.rows[3][k]]  # one row's value at a recorded position
    assert columns.derived_columns(graph, [table], missing, filled) is not None  # trusted
    assert columns.derived_columns(graph, [table], missing) is None  # swept: refused
    other = {id(table): (object(), at)}  # a record of another object under its id
    assert columns.derived_columns(graph, [table], missing, other) is None
    unrecorded = {id(table): (table, at - {k})}
    assert columns.derived_columns(graph, [table], missing, unrecorded) is None
