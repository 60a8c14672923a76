"""Compile-time values: the closed stamped rows' derived tensors take their values a column
at a time once the rest of the order is evaluated, giving what the walk over every node
gives (every node a value, each derived tensor its input's object); a fault outside the rows
is named as the walk names it."""

from __future__ import annotations

from typing import Any

import pytest
import torch

import derivgraph.compiler.columns as columns
import derivgraph.planner as planner
from derivgraph import DerivedTensor, Spec, Target, register_op
from derivgraph.compiler.graph import DerivedGraph
from derivgraph.compiler.stamp import stamping
from derivgraph.errors import SpecValidationError
from derivgraph.tools.bench_scaling import scaling_model, scaling_spec
from tests.compiler.scaling_variants import spec_with_generic_rows

_spec_with_chains = spec_with_generic_rows


def _values(model: Any, spec: Spec) -> tuple[Any, dict[str, Any]]:
    with stamping(True):
        plan, values, _, _ = planner._prepare(model, [spec], False, True)
    return plan.graph, values


@pytest.mark.parametrize(("spec", "taken"), [(scaling_spec, True), (_spec_with_chains, False)])
def test_the_rows_derived_columns_give_what_the_walk_gives(monkeypatch: pytest.MonkeyPatch,
                                                           spec: Any, taken: bool) -> None:
    """``_spec_with_chains``: ``inv * 2.0`` reads a derived tensor, so its column is not
    evaluated before the walk and the rows are left to it (the walk over every node)."""
    filled: list[int] = []
    real = columns.fill_derived

    def spy(rows: list[Any], env: dict[str, Any], book: Any = None) -> None:
        filled.append(len(rows))
        real(rows, env, book)

    monkeypatch.setattr(planner, "fill_derived", spy)
    model = scaling_model(24)
    graph, fast = _values(model, spec())
    assert (bool(filled) and filled[0] >= 3) is taken  # the columns were taken
    assert set(fast) >= set(graph.ordered())
    for node_id, decl in graph.derived.items():
        assert fast[node_id] is fast[decl.input], node_id
    monkeypatch.setattr(planner, "derived_columns", lambda *args: None)  # the walk only
    graph2, walked = _values(model, spec())
    assert set(walked) == set(fast)
    for node_id, value in walked.items():
        other = fast[node_id]
        if isinstance(value, torch.Tensor):
            assert torch.equal(value, other) and value.dtype == other.dtype, node_id
        else:
            assert value == other, node_id


def _fails(x: torch.Tensor) -> torch.Tensor:
    if x.device.type != "meta":
        raise RuntimeError("fails on real tensors")
    return x * 2.0


register_op("derived_columns_fails", _fails, replace=True)


class FaultyTail(torch.nn.Module):
    """A module after the stamped layers (so its nodes come after the rows' in the order)."""

    def __init__(self) -> None:
        super().__init__()
        self.t = torch.nn.Parameter(torch.ones(8), requires_grad=False)


def test_a_fault_outside_the_rows_is_named_as_the_walk_names_it(
        monkeypatch: pytest.MonkeyPatch) -> None:
    outside = Spec(name="tail", target=Target(module_class=["FaultyTail"]),
                   derived=[DerivedTensor(name="bad", kind="attribute",
                                          formula="derived_columns_fails(t)")])

    def issue() -> Any:
        model = scaling_model(24)
        model.tail = FaultyTail()
        with stamping(True), pytest.raises(SpecValidationError) as info:
            planner._prepare(model, [scaling_spec(), outside], False, True)
        return [(i.rule, i.node) for i in info.value.issues]

    cut: list[Any] = []
    real = DerivedGraph.unspanned
    monkeypatch.setattr(DerivedGraph, "unspanned", lambda *a: cut.append(real(*a)) or cut[-1])
    fast = issue()
    assert cut and cut[0] is not None  # the rest of the order walked first
    assert fast and fast[0][1] == "tail.bad"
    monkeypatch.setattr(planner, "derived_columns", lambda *args: None)
    assert issue() == fast


def test_canary_a_derived_column_read_off_the_wrong_input_is_seen(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Planted: every derived column takes its template's own input position shifted by one;
    the identity check above goes red."""
    real = columns.derived_columns

    def shifted(*args: Any) -> Any:
        found = real(*args)
        return None if found is None else [
            (t, k, (j + 1) % len(t.template) if j is not None else j, s)
            for t, k, j, s in found]

    monkeypatch.setattr(planner, "derived_columns", shifted)
    graph, values = _values(scaling_model(24), scaling_spec())
    assert any(values[n] is not values[d.input] for n, d in graph.derived.items())


def test_fill_derived_reads_a_shared_input_once_and_only_for_rows() -> None:
    """A column whose rows read one shared node takes that node's value (the very object)
    for every row; a column with no rows reads nothing (a shared node absent is no fault)."""
    from types import SimpleNamespace

    table = SimpleNamespace(column=lambda k: {0: ["a.x", "b.x"], 1: ["a.y", "b.y"]}[k])
    empty = SimpleNamespace(column=lambda k: [])
    shared = torch.ones(2)
    env: dict[str, Any] = {"c": shared, "a.y": torch.zeros(1), "b.y": torch.zeros(2)}
    columns.fill_derived([(table, 0, None, "c"), (empty, 0, None, "absent")], env)
    assert env["a.x"] is shared and env["b.x"] is shared and "absent" not in env
    del env["a.x"], env["b.x"]
    columns.fill_derived([(table, 0, 1, "unused")], env)
    assert env["a.x"] is env["a.y"] and env["b.x"] is env["b.y"]
    with pytest.raises(KeyError):
        columns.fill_derived([(table, 0, None, "absent")], env)
