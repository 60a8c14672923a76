"""A column run's twins (each stamped op -> the template's op it copies) are held as the run
and put in the dict when one of its ops is first looked up (:class:`Twins`): the lookups give
what the eager dict gave (a layer replay's later write wins over the run's pair), a lookup of
an id that is none of a held run's ops puts nothing in, and shape inference of a row op takes
its template's meta value through a held run's twin."""

from __future__ import annotations

from typing import Any

import pytest
import torch

from derivgraph.compiler import build, infer
from derivgraph.compiler.bind import match_specs
from derivgraph.compiler.build import build_graph
from derivgraph.compiler.graph import DerivedGraph
from derivgraph.compiler.ir import NodeKind
from derivgraph.compiler.replay import Twins
from derivgraph.compiler.stamp import stamping
from derivgraph.tools.bench_scaling import scaling_model, scaling_spec

LAYERS = 7


def _built(monkeypatch: pytest.MonkeyPatch) -> tuple[DerivedGraph, Twins]:
    """The scaling model's graph and the twins its build handed to shape inference."""
    handed: list[Any] = []
    real = build.infer_shapes

    def keep(graph: DerivedGraph, twins: Any = None, run_nodes: Any = None) -> None:
        handed.append(twins)
        real(graph, twins, run_nodes)

    monkeypatch.setattr(build, "infer_shapes", keep)
    torch.manual_seed(0)
    model = scaling_model(LAYERS)
    with stamping(True):
        graph = build_graph(model, match_specs(model, [scaling_spec()]))
    [twins] = handed
    assert isinstance(twins, Twins) and not graph.issues
    return graph, twins


def _rule(graph: DerivedGraph) -> dict[str, str]:
    """The eager twins of the closed rows: each row op -> the template op at its position."""
    [table] = graph.stamps
    ops = [k for k, t in enumerate(table.template) if graph.nodes[t].kind is NodeKind.OP]
    assert len(table.rows) == LAYERS - 1 and len(ops) == 2
    return {row[k]: table.template[k] for row in table.rows for k in ops}


@pytest.mark.parametrize("first", [0, -1])
def test_the_held_run_gives_the_eager_twins(monkeypatch: pytest.MonkeyPatch, first: int) -> None:
    graph, twins = _built(monkeypatch)
    want = _rule(graph)
    assert twins._held and not set(want) & set(twins)  # held through the build
    find = twins.finder()
    ops = list(want)
    assert find(ops[first]) == want[ops[first]]  # the run's first op, or its last, first
    assert {k: find(k) for k in want} == want
    assert not twins._held and dict(twins) == want  # the run put in once


def test_a_lookup_outside_every_run_puts_nothing_in(monkeypatch: pytest.MonkeyPatch) -> None:
    graph, twins = _built(monkeypatch)
    find = twins.finder()
    [table] = graph.stamps
    for node_id in [*table.template, *table.rows[0][:4], "%999999:mul", "%x:mul", "%", "p"]:
        assert find(node_id) is None
    assert twins._held and not twins


def test_a_later_write_wins_over_the_runs_pair() -> None:
    made: list[int] = []
    twins = Twins()
    twins["%2:mul"] = "%1:mul"  # before the run: none of its ops

    def pairs() -> list[tuple[str, str]]:
        made.append(1)
        return [("%3:div", "%1:div"), ("%4:mul", "%2:mul"), ("%5:div", "%1:div")]

    twins.hold(3, 5, pairs)
    twins["%5:div"] = "%9:div"  # a layer's replay after it (a CSE hit on a run's op)
    find = twins.finder()
    assert find("%2:mul") == "%1:mul" and find("%7:div") is None and not made
    assert find("%5:div") == "%9:div" and not made  # the dict's, the run still held
    assert find("%4:mul") == "%2:mul" and made == [1]
    assert dict(twins) == {"%2:mul": "%1:mul", "%5:div": "%9:div", "%3:div": "%1:div",
                           "%4:mul": "%2:mul"}
    twins.settle()
    assert made == [1] and twins.finder() == twins.get


def test_settle_puts_every_run_in_order() -> None:
    twins = Twins()
    twins.hold(1, 2, lambda: [("%1:a", "t1"), ("%2:a", "t2")])
    twins.hold(3, 3, lambda: [("%3:a", "t3")])
    twins["%2:a"] = "later"
    twins.settle()
    assert list(twins.items()) == [("%2:a", "later"), ("%1:a", "t1"), ("%3:a", "t3")]


def test_inference_takes_the_templates_value_through_a_held_twin(
        monkeypatch: pytest.MonkeyPatch) -> None:
    graph, twins = _built(monkeypatch)
    assert twins._held
    [table] = graph.stamps
    computed: list[str] = []  # the nodes whose meta value was computed, not taken
    real = infer.MetaInterpreter.run_node

    def counting(self: Any, node: Any) -> Any:
        computed.append(node.id)
        return real(self, node)

    monkeypatch.setattr(infer.MetaInterpreter, "run_node", counting)
    interp = infer._StampedMeta(graph, twins)
    rows = {n for row in table.rows for n in row}  # the rest first, as inference runs it
    interp.run([n for n in graph.ordered() if n not in rows])
    for row in table.rows:
        interp.run([n for n in row if graph.nodes[n].kind is NodeKind.SOURCE])
        for k, node_id in enumerate(row):
            if graph.nodes[node_id].kind is NodeKind.OP:
                got = interp.run_node(graph.nodes[node_id])
                assert got is interp.env[table.template[k]]  # the twin's value object
    assert not set(computed) & set(_rule(graph))
