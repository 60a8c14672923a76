""":meth:`DerivedGraph.derived_each <derivgraph.compiler.graph.DerivedGraph.derived_each>`
while a run's derived tensors are held: one sweep of one set of every derived id where the
ids asked outnumber the derived tensors, a sweep per set else; both give, id by id, whether
the graph's :attr:`derived` holds it (the oracle, read once the nodes are made). Canaries:
each path is taken on its side of the size rule (its answers checked against the oracle),
and a held run's hits count where no made node is asked (were its or-sweep skipped, they
would read False)."""

from __future__ import annotations

import pytest

from derivgraph.compiler import graph as graph_module
from derivgraph.compiler.bind import match_specs
from derivgraph.compiler.build import build_graph
from derivgraph.compiler.graph import DerivedGraph
from derivgraph.tools.bench_scaling import scaling_model, scaling_spec


def _graph() -> DerivedGraph:
    model = scaling_model(6)
    graph = build_graph(model, match_specs(model, [scaling_spec()]))
    assert graph._held  # rows 1..5 held by column
    return graph


def _sets_made(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Count the union sets :meth:`derived_each` makes (its one-set path)."""
    made: list[int] = []

    class Counted(set[str]):
        def __init__(self, *args: object) -> None:
            made.append(1)
            super().__init__(*args)  # type: ignore[arg-type]

    monkeypatch.setattr(graph_module, "set", Counted, raising=False)
    return made


@pytest.mark.parametrize("long", [True, False], ids=["one-set", "per-set"])
def test_each_path_answers_as_the_derived_dict(long: bool,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    graph = _graph()
    ordered = graph.ordered()
    asked = [*ordered, "nothing", "layers.3.inv", "layers.0.inv", *ordered] if long else \
        ["layers.3.inv", "layers.0.scale", "layers.0.inv", "%1:div", "layers.5.prod"]
    total = len(graph._derived) + sum(len(s) for _, s, _ in graph._held)
    assert (len(asked) > total) is long
    made = _sets_made(monkeypatch)
    got = graph.derived_each(iter(asked))
    assert len(made) == (1 if long else 0)
    monkeypatch.undo()
    assert graph._held  # nothing was made by asking
    derived = graph.derived  # the oracle: every node made
    assert got == [i in derived for i in asked]
    assert sum(got) == (2 * len(derived) + 2 if long else 3)


def test_a_held_runs_ids_are_found_where_no_made_node_is_asked() -> None:
    graph = _graph()
    assert graph.derived_each(["layers.4.inv", "layers.4.scale", "layers.2.strides"]) \
        == [True, False, True]
    assert graph.derived_each(["layers.4.scale", "layers.4.weight"]) == [False, False]


@pytest.mark.parametrize("hit", ["none", "made", "held", "last"])
def test_the_disjoint_test_answers_false_only_where_no_set_holds_one(hit: str) -> None:
    """The per-set path's disjointness test (graph83): where neither the made nodes nor a
    held run holds one of the ids, every answer is False; one hit anywhere (a made node, a
    held run's, the last id asked) and the sweeps answer, id by id as the oracle. Canary:
    the test made of the made nodes only (a held run's hit then read False) turns "held"
    and "last" red."""
    graph = _graph()
    made = next(iter(graph._derived))  # the template row's, made
    sources = [f"layers.{i}.scale" for i in range(6)] + ["nothing", "%1:div"]
    asked = {"none": sources, "made": [made, *sources], "held": ["layers.2.prod", *sources],
             "last": [*sources, "layers.5.scale_alias"]}[hit]
    got = graph.derived_each(asked)
    assert graph._held  # nothing was made by asking
    derived = graph.derived  # the oracle
    assert got == [i in derived for i in asked]
    assert sum(got) == (0 if hit == "none" else 1)
