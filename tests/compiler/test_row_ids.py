"""The one rule of a stamped row's ids (``instances.RowIds``): the build makes the derived
tensors' ids and a column run's source and op ids by it and keeps each column with what it
was made of; the record check (``consistent_rows``) asks it for the ids a table's record
gives and reads a kept column only where the record's paths (or op numbers) are that
column's, else makes them. Its answer is the rule's, every row (asserted against the check
with no kept column, and against the ids written out by value). Canaries (run as
mutations, see build82's NOTES.md): a kept stretch taken without comparing the paths, an
op column taken without comparing the numbers, a kept column of another suffix, each turns
one case here red."""

from __future__ import annotations

from typing import Any

import pytest

from derivgraph.compiler import build
from derivgraph.compiler.bind import match_specs
from derivgraph.compiler.instances import InstanceTable, RowIds, consistent_rows, row_recipe
from derivgraph.compiler.stamp import stamping
from derivgraph.tools.bench_scaling import scaling_model, scaling_spec

_LAYERS = 9


def _graph(monkeypatch: pytest.MonkeyPatch | None = None) -> Any:
    """The stamped graph; with ``monkeypatch``, its kept columns not released after its
    proof (to read them here)."""
    if monkeypatch is not None:
        monkeypatch.setattr(RowIds, "release", lambda self: None)
    model = scaling_model(_LAYERS)
    with stamping(True):
        return build.build_graph(model, match_specs(model, [scaling_spec()]))


def test_the_build_releases_its_columns_after_its_proof() -> None:
    graph = _graph()
    [table] = graph.stamps
    recipe = row_recipe(table, graph.derived)
    assert recipe is not None
    assert not graph.row_ids._paths and not graph.row_ids._ops  # nothing held by the plan
    assert consistent_rows(table, recipe, graph.derived, graph.run_nodes, graph.row_ids) \
        == [True] * (_LAYERS - 1)


def test_the_build_keeps_its_columns_and_the_check_reads_them_without_a_string_made(
        monkeypatch: pytest.MonkeyPatch) -> None:
    graph = _graph(monkeypatch)
    [table] = graph.stamps
    recipe = row_recipe(table, graph.derived)
    assert recipe is not None
    rule = graph.row_ids
    # the derived tensors' ids over every layer (the template's row first), the run's
    # sources over the stamped rows
    inv = rule.paths(table.prefixes, ".inv")
    assert inv == [f"layers.{i}.inv" for i in range(1, _LAYERS)]
    assert all(a is b for a, b in zip(inv, table.column(0), strict=True))  # the kept ids
    weight = rule.paths(table.prefixes, ".weight")
    assert weight == [f"layers.{i}.weight" for i in range(1, _LAYERS)]
    assert all(a is b for a, b in zip(weight, table.column(6), strict=True))
    div = rule.ops([s + 1 for s in table.starts], "div")
    assert div == [f"%{s + 1}:div" for s in table.starts]
    assert all(a is b for a, b in zip(div, table.column(5), strict=True))
    assert consistent_rows(table, recipe, graph.derived, graph.run_nodes, rule) == \
        consistent_rows(table, recipe, graph.derived) == [True] * (_LAYERS - 1)


def test_a_record_that_is_not_a_kept_columns_is_made_by_the_rule(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Each way a record differs from what the build kept: a path changed (the kept
    stretch does not hold), two columns swapped (another suffix's kept ids), an op count
    changed (the kept numbers do not hold), paths in the middle of a kept column. The
    rows that differ are the ones the plain check finds, by value."""
    graph = _graph(monkeypatch)
    [table] = graph.stamps
    recipe = row_recipe(table, graph.derived)
    assert recipe is not None
    rule = graph.row_ids
    want = [i != 2 for i in range(_LAYERS - 1)]

    def check(planted: InstanceTable) -> list[bool]:
        got = consistent_rows(planted, recipe, graph.derived, None, rule)
        assert got == consistent_rows(planted, recipe, graph.derived)
        return got

    rows = list(table.rows)
    moved = InstanceTable(table.template, rows, table.base,
                          table.prefixes[:2] + ["layers.99"] + table.prefixes[3:],
                          list(table.starts))
    assert check(moved) == want
    swapped = list(rows)
    swapped[2] = (rows[2][1], rows[2][0], *rows[2][2:])  # inv and prod
    assert check(InstanceTable(table.template, swapped, table.base, list(table.prefixes),
                               list(table.starts))) == want
    weights = list(rows)
    weights[2] = (*rows[2][:4], rows[2][6], rows[2][5], rows[2][4], rows[2][7])  # scale, weight
    assert check(InstanceTable(table.template, weights, table.base, list(table.prefixes),
                               list(table.starts))) == want
    starts = list(table.starts)
    starts[2] += 2  # the op count of another row
    assert check(InstanceTable(table.template, rows, table.base, list(table.prefixes),
                               starts)) == want
    middle = InstanceTable(table.template, rows[2:5], table.base, table.prefixes[2:5],
                           table.starts[2:5])
    assert check(middle) == [True] * 3
    wrong_middle = list(rows[2:5])
    wrong_middle[1] = (rows[1][0], *rows[3][1:])  # layer 2's inv in layer 4's row
    assert check(InstanceTable(table.template, wrong_middle, table.base, table.prefixes[2:5],
                               table.starts[2:5])) == [True, False, True]


@pytest.mark.parametrize("keep", [False, True])
def test_the_rule_by_value(keep: bool) -> None:
    rule = RowIds()
    assert (rule.keep_paths(["a", "b.c"], [".x", ".z"]) if keep else
            [rule.paths(["a", "b.c"], ".x"), rule.paths(["a", "b.c"], ".z")]) == \
        [["a.x", "b.c.x"], ["a.z", "b.c.z"]]
    assert rule.ops(range(3, 9, 3), "mul", keep=keep) == ["%3:mul", "%6:mul"]
    # read back from a kept column only where its paths / numbers are the asked ones
    assert rule.paths(["b.c"], ".x") == ["b.c.x"]
    assert rule.paths(["b.c", "a"], ".x") == ["b.c.x", "a.x"]
    assert rule.paths(["a"], ".y") == ["a.y"] and rule.paths(["b.c"], ".z") == ["b.c.z"]
    assert rule.ops([6], "mul") == ["%6:mul"]
    assert rule.ops([3, 7], "mul") == ["%3:mul", "%7:mul"]
    assert rule.ops([3, 6], "div") == ["%3:div", "%6:div"]
    assert rule.ops([3, 6, 9], "mul") == ["%3:mul", "%6:mul", "%9:mul"]
    assert rule.paths([], ".x") == [] and rule.ops([], "mul") == []
