"""A closed stamped row's source dependencies are read off its template by position
(:mod:`derivgraph.compiler.row_deps`): the same sets as the walk over every node, the rows'
sets taken from the table, and a template reading a non-constant node outside it read no
row."""

from __future__ import annotations

from typing import Any

import pytest
import torch
from torch import nn

from derivgraph import DerivedTensor, Spec, Target, compile_plan
from derivgraph.compiler import row_deps
from derivgraph.compiler.graph import DerivedGraph
from derivgraph.compiler.instances import InstanceTable
from derivgraph.compiler.ir import Node, NodeKind
from derivgraph.compiler.layers import closed_layers
from derivgraph.compiler.row_deps import SourceDeps, row_source_deps, template_dep_positions
from derivgraph.compiler.stamp import stamping
from derivgraph.tools.bench_scaling import scaling_model, scaling_spec
from tests.compiler.test_order_blocks import chain_specs


def _walked(graph: DerivedGraph) -> dict[str, frozenset[str]]:
    """The sets of the walk over every node (no proof of the rows current)."""
    graph.layer_cache, graph._deps_version = (-1, None), -1
    deps = dict(graph.source_deps())
    graph._deps_version = -1
    return deps


def _compiled(model: nn.Module, specs: list[Spec]) -> Any:
    with stamping(True):
        return compile_plan(model, specs).graph


def test_scaling_rows_by_position_equal_the_walk() -> None:
    graph = _compiled(scaling_model(6), [scaling_spec()])
    walked = _walked(graph)
    tables = closed_layers(graph)
    assert [len(t.rows) for t in tables] == [5]
    # inv, prod, strides, scale_alias, scale, %div, weight, %mul: scale is 4, weight 6
    assert tables[0].template[:4] == ("layers.0.inv", "layers.0.prod", "layers.0.strides",
                                      "layers.0.scale_alias")
    assert template_dep_positions(graph.nodes, tables[0].template) == [
        (4,), (4, 6), (), (4,), (4,), (4,), (6,), (4, 6)]
    rows = row_source_deps(graph.nodes, tables)
    assert len(rows) == 5 * 8
    assert rows["layers.3.prod"] == frozenset({"layers.3.scale", "layers.3.weight"})
    assert rows["layers.3.strides"] == frozenset()
    assert graph.source_deps() == walked
    assert len(walked) == len(graph.nodes)


def test_rows_reading_each_other_and_an_open_row() -> None:
    """Derived tensors reading derived tensors of their row; a row another spec reads is not
    closed and is walked; the sets are the walk's either way."""
    graph = _compiled(scaling_model(5), chain_specs())
    walked = _walked(graph)
    rows = row_source_deps(graph.nodes, closed_layers(graph))
    assert "layers.1.c" in rows and "layers.2.c" not in rows
    assert rows["layers.1.c"] == frozenset({"layers.1.scale", "layers.1.weight"})
    assert graph.source_deps() == walked


def test_the_rows_sets_come_from_the_table() -> None:
    """With the proof current, a row's sets are its own nodes at the template's positions
    (a table naming other nodes is read as it is: the walk does not redo the rows)."""
    graph = _compiled(scaling_model(3), [scaling_spec()])
    table = closed_layers(graph)[0]
    # the same ids at every position but the two sources swapped: prod still reads both
    planted = InstanceTable(table.template, [row[:4] + (row[6], row[5], row[4], row[7])
                                             for row in table.rows])
    graph.layer_cache, graph._deps_version = (graph.ir.version, [planted]), -1
    deps = graph.source_deps()
    assert deps["layers.1.inv"] == frozenset({"layers.1.weight"})  # planted: position 4
    assert deps["layers.1.prod"] == frozenset({"layers.1.scale", "layers.1.weight"})
    assert deps["layers.0.inv"] == frozenset({"layers.0.scale"})  # the template: walked


def test_a_template_reading_a_node_outside_it_reads_no_row() -> None:
    nodes = {"src": Node("src", NodeKind.SOURCE),
             "outside": Node("outside", NodeKind.OP, op="neg", inputs=("src",)),
             "const": Node("const", NodeKind.OP, op="full"),
             "t.a": Node("t.a", NodeKind.DERIVED, inputs=("t.op",)),
             "t.op": Node("t.op", NodeKind.OP, op="add", inputs=("const", "outside"))}
    template = ("t.a", "t.op")
    assert template_dep_positions(nodes, template) is None
    assert row_source_deps(nodes, [InstanceTable(template, [("u.a", "u.op")])]) == {}
    nodes["t.op"].inputs = ("const",)  # a shared constant only: no source
    assert template_dep_positions(nodes, template) == [(), ()]


def test_the_rest_is_cut_at_the_rows_spans(monkeypatch: Any) -> None:
    """With the rows read by position and the order's spans made of those tables, the sweep
    walks the order cut at the spans (:meth:`DerivedGraph.unspanned`): the template and the
    shared constant only, and the sets are the walk's."""
    graph = _compiled(scaling_model(6), [scaling_spec()])
    walked = _walked(graph)
    graph = _compiled(scaling_model(6), [scaling_spec()])
    cuts: list[list[str] | None] = []
    real = DerivedGraph.unspanned

    def spied(self: DerivedGraph, tables: Any) -> list[str] | None:
        cuts.append(real(self, tables))
        return cuts[-1]

    monkeypatch.setattr(DerivedGraph, "unspanned", spied)
    graph._deps_version = -1
    assert graph.source_deps() == walked
    [cut] = cuts
    assert cut is not None and len(cut) == 8 + 1  # the template's nodes, the shared full
    assert cut == [n for n in graph.ordered() if n not in row_source_deps(
        graph.nodes, closed_layers(graph))]


def test_the_compile_reads_no_row_set() -> None:
    """Every column of the rows is kept aside (:class:`SourceDeps`), the derived tensors'
    too: the compile, a run and a refill never need them (the constants sweep answers per
    column, the lowering reads the templates and the rest); a read of a row's derived tensor
    puts every column in and gives the walk's set."""
    model = scaling_model(6)
    with stamping(True):
        plan = compile_plan(model, [scaling_spec()])
    deps = plan.graph.source_deps()
    assert isinstance(deps, SourceDeps) and deps.pending
    assert not dict.__contains__(deps, "layers.3.prod")
    assert not dict.__contains__(deps, "layers.3.scale")
    assert dict.__len__(deps) == len(plan.graph.nodes) - 5 * 8
    run_reload_refill(plan, model)
    assert deps.pending
    assert deps["layers.3.prod"] == frozenset({"layers.3.scale", "layers.3.weight"})
    assert not deps.pending and dict.__len__(deps) == len(plan.graph.nodes)
    assert deps["layers.3.strides"] == frozenset()


def test_no_row_set_is_made_before_first_need(monkeypatch: Any) -> None:
    """No position set of the rows is made at compile; the first need makes each once (the
    empty one too: one object for every row) and the sets are the walk's."""
    made: list[tuple[int, ...]] = []
    real = row_deps._row_sets

    def spied(columns: Any, at: tuple[int, ...]) -> list[frozenset[str]]:
        made.append(at)
        return real(columns, at)

    graph = _compiled(scaling_model(6), [scaling_spec()])
    walked = _walked(graph)
    monkeypatch.setattr(row_deps, "_row_sets", spied)
    graph = _compiled(scaling_model(6), [scaling_spec()])
    deps = graph.source_deps()
    assert deps.pending and made == []
    assert deps["layers.3.weight"] == frozenset({"layers.3.weight"})  # a kept key: made now
    assert not deps.pending and sorted(made) == [(), (4,), (4, 6), (6,)]
    assert dict(dict.items(deps)) == walked
    [table] = closed_layers(graph)
    strides = [row[2] for row in table.rows]
    assert len({id(deps[n]) for n in strides}) == 1 and deps[strides[0]] == frozenset()
    deps.complete()
    assert len(made) == 4  # made once


def test_a_kept_set_two_columns_have_is_made_once(monkeypatch: Any) -> None:
    """The weight's set, kept aside, is had by its source and by the op ``weight + 1`` (the
    derived tensor reads the scale too): made once, on first need, one set for both rows."""
    made: list[tuple[int, ...]] = []
    real = row_deps._row_sets
    monkeypatch.setattr(row_deps, "_row_sets", lambda columns, at: made.append(at) or real(
        columns, at))
    spec = Spec(name="shifted", target=Target(module_class=["ScalingLayer"]),
                derived=[DerivedTensor(name="p", kind="attribute",
                                       formula="scale * (weight + 1.0)")])
    graph = _compiled(scaling_model(4), [spec])
    deps = graph.source_deps()
    [table] = closed_layers(graph)
    positions = template_dep_positions(graph.nodes, table.template)
    assert positions is not None
    weight = table.template.index("layers.0.weight")
    shared = [k for k, at in enumerate(positions) if at == (weight,)]
    assert len(shared) == 2 and deps.pending and (weight,) not in made
    row = table.rows[1]
    assert row[weight] == "layers.2.weight"  # the template is layer 0
    assert deps[row[shared[0]]] is deps[row[shared[1]]] == frozenset({"layers.2.weight"})
    assert made.count((weight,)) == 1


_READS: list[Any] = [len, list, lambda d: list(d.keys()), lambda d: list(d.values()),
                     lambda d: list(d.items()), lambda d: "layers.3.scale" in d,
                     lambda d: d.get("layers.3.scale"), lambda d: d["layers.3.scale"],
                     lambda d: d.copy(), repr, dict, lambda d: d == {}]


@pytest.mark.parametrize("read", range(len(_READS)))
def test_any_read_of_a_kept_key_or_of_the_whole_puts_every_column_in(read: int) -> None:
    graph = _compiled(scaling_model(6), [scaling_spec()])
    walked = _walked(graph)
    graph = _compiled(scaling_model(6), [scaling_spec()])
    deps = graph.source_deps()
    assert deps.pending
    _READS[read](deps)
    assert not deps.pending
    assert dict(dict.items(deps)) == walked
    assert deps["layers.3.scale"] == frozenset({"layers.3.scale"})
    op = closed_layers(graph)[0].rows[2][7]  # a row's mul: scale and weight
    assert deps[op] == frozenset({"layers.3.scale", "layers.3.weight"})
    with pytest.raises(KeyError):
        deps["no.such.node"]


def run_reload_refill(plan: Any, model: Any) -> None:
    """A run, every parameter changed in place, a run and a refill (what a reload does)."""
    plan.run()
    with torch.no_grad():
        for p in model.parameters():
            p.add_(1.0)
    plan.run()
    plan.refill()
