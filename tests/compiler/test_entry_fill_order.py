"""The compile's entry table filled in stretches (``planner._fill_entries``) and the owner
paths its transaction records whole (``planner._owner_paths``), each against the per-entry
rule it replaces.

``_fill_entries`` puts the planned entries in ``plan.entries.by_id`` a stretch at a time and
materializes each entry in no column where the per-entry loop did: when every entry before it,
and none after it, is in the table (an alias reads its target there, a view its base).
Canaries: every entry put in before the first materialize; the stretch after the last one
dropped; ``_owner_paths`` cutting the wrong side of the last dot.
"""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest
import torch

from derivgraph import planner
from derivgraph.compiler.stamp import stamping
from derivgraph.paths import get_path
from derivgraph.runtime.entry_columns import EntryColumn
from derivgraph.tools.bench_scaling import scaling_model, scaling_spec


def _loop(ids: list[str], planned: list[tuple[Any, Any]], at_rest: list[int],
          seen: list[tuple[str, list[str]]]) -> tuple[dict[str, Any], dict[str, Any]]:
    """The per-entry loop ``_fill_entries`` replaces (its materialize recorded in ``seen``)."""
    in_columns = set(ids) - {ids[i] for i in at_rest}
    entries: dict[str, Any] = {}
    generic: dict[str, Any] = {}
    for node_id, (entry, _extra) in zip(ids, planned):
        if node_id not in in_columns:
            seen.append((entry, list(entries)))
            generic[node_id] = entry
        entries[node_id] = entry
    return entries, generic


@pytest.mark.parametrize("at_rest", [[], [0], [9], [0, 9], [3, 4, 5], [2, 7],
                                     list(range(10))])
def test_the_table_is_filled_as_the_per_entry_loop_fills_it(
        monkeypatch: pytest.MonkeyPatch, at_rest: list[int]) -> None:
    ids = [f"layers.{i}.x" for i in range(10)]
    planned = [(object(), None) for _ in ids]
    seen: list[tuple[Any, list[str]]] = []
    plan = SimpleNamespace(entries=SimpleNamespace(by_id={}))

    def spy(plan_: Any, entry: Any, extra: Any, fills: list[Any]) -> None:
        assert plan_ is plan
        seen.append((entry, list(plan.entries.by_id)))

    monkeypatch.setattr(planner, "_materialize", spy)
    generic = planner._fill_entries(plan, ids, planned, at_rest, [])  # type: ignore[arg-type]
    want_seen: list[tuple[Any, list[str]]] = []
    want_entries, want_generic = _loop(ids, planned, at_rest, want_seen)
    assert seen == want_seen  # each materialized with exactly the entries before it in
    assert list(plan.entries.by_id.items()) == list(want_entries.items())
    assert list(generic.items()) == list(want_generic.items())


def _column(paths: list[str]) -> Any:
    return SimpleNamespace(entries=[SimpleNamespace(owner_path=p)
                                    for p in paths], paths=None)  # read from the entries


def test_the_owner_paths_are_the_per_row_rule_s() -> None:
    columns = [_column(["layers.0", "layers.1", "blocks.2.attn", "top", ""]),
               _column(["layers.0", "a.b.c.d"])]
    rest = [(SimpleNamespace(owner_path=p), None) for p in ["x.y", "z"]]
    want = {"x.y", "z"}
    for column in columns:
        want.update(path.rpartition(".")[0] for path in
                    {e.owner_path for e in column.entries})
    paths = [EntryColumn.owner_paths(c) for c in columns]  # type: ignore[arg-type]
    got = planner._owner_paths(rest, paths)  # type: ignore[arg-type]
    assert got == want == {"x.y", "z", "layers", "blocks.2", "", "a.b.c"}


def test_a_stamped_compile_fills_the_table_in_the_compile_s_order() -> None:
    """The entries of a compile with columns and generic entries, in the graph's order; the
    startup record holds every source's object id and address (``address_of``'s)."""
    from derivgraph.addresses import address_of

    torch.manual_seed(0)
    with stamping(True):
        plan = planner.compile_plan(scaling_model(6), [scaling_spec()])
    graph = plan.graph
    order = [n for n in graph.ordered() if n in graph.derived]
    assert list(plan.entries.by_id) == order
    assert plan.entries.columns and plan.entries.generic
    in_columns = {i for c in plan.entries.columns for i in c.ids}
    assert list(plan.entries.generic) == [n for n in order if n not in in_columns]
    objs = {p: get_path(plan.model, p) for p in [*graph.sources(), *plan.folds.entries]}
    assert objs and all(isinstance(t, torch.Tensor) for t in objs.values())
    assert plan.source_ptrs == {p: (id(t), address_of(t)) for p, t in objs.items()}


@pytest.mark.parametrize("case", ["equal", "one-differs", "longer", "shorter"])
def test_an_equal_column_is_swept_once_and_a_differing_one_in_full(case: str) -> None:
    """``_owner_paths`` sweeps a column equal to one already swept once (graph83): the
    answer is the per-row rule's whether the columns are equal, differ in one row (the
    last), or one is the other with a row more or less. Canary: skipping a column whose
    first row is one already swept (not the whole column compared) turns the differing
    cases red."""
    base = ["layers.0", "layers.1", "blocks.2.attn", "layers.3"]
    other = {"equal": list(base), "one-differs": [*base[:-1], "heads.7.q"],
             "longer": [*base, "tail.9.x"], "shorter": base[:2]}[case]
    columns = [list(base), other, list(base)]
    want = {path.rpartition(".")[0] for column in columns for path in column} | {"r"}
    rest = [(SimpleNamespace(owner_path="r"), None)]
    assert planner._owner_paths(rest, columns) == want  # type: ignore[arg-type]
    assert ("heads.7" in want) is (case == "one-differs")
    assert ("tail.9" in want) is (case == "longer")
