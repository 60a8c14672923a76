"""The graph's source list kept as nodes are added (:meth:`DerivedGraph.sources`).

Every add of :class:`DerivedGraph` appends the sources it made to a running list, which stays
complete while every add of the IR was one of those and made as many new nodes as it was
given (none replaced one); where a node was added or replaced another way, :meth:`sources`
sweeps the nodes (the reference rule) and keeps the list again from there. Asserted against
that sweep on real builds (column-replayed runs and node-by-node builds); canaries: a source
put straight into the IR is listed, and a derived tensor that replaces a source node drops it
(each goes red if its check is removed).
"""

from __future__ import annotations

import pytest
import torch
from torch import nn

from derivgraph.compiler.bind import match_specs
from derivgraph.compiler.build import build_graph
from derivgraph.compiler.graph import DerivedGraph, DerivedNode
from derivgraph.compiler.ir import Node, NodeKind
from derivgraph.compiler.stamp import stamping
from derivgraph.spec.model import DerivedTensor
from derivgraph.tools.bench_scaling import scaling_model, scaling_spec


def _swept(graph: DerivedGraph) -> list[str]:
    return [n for n, d in graph.nodes.items() if d.kind is NodeKind.SOURCE]


@pytest.mark.parametrize("stamped", [True, False])
def test_the_kept_list_is_the_sweep_on_a_build(stamped: bool) -> None:
    model = scaling_model(6)
    with stamping(stamped):
        graph = build_graph(model, match_specs(model, [scaling_spec()]))
    assert graph._source_adds == graph.ir.added  # kept by every add: no sweep needed
    expected = [f"layers.{i}.{name}" for i in range(6) for name in ("scale", "weight")]
    assert graph.sources() == _swept(graph) == expected
    listed = graph.sources()
    listed.append("x")  # a copy: the kept list is not the caller's
    assert graph.sources() == expected


def _graph_with_source() -> DerivedGraph:
    graph = DerivedGraph(nn.Module())
    graph.source("a", torch.zeros(2))
    graph.op_keyed("neg", (), {}, ("neg", "a"), ["a"])
    return graph


def test_canary_a_source_added_to_the_ir_directly_is_listed() -> None:
    graph = _graph_with_source()
    graph.ir.add(Node("b", NodeKind.SOURCE, shape=(2,), stride=(1,), dtype=torch.float32,
                      device=torch.device("cpu")))
    assert graph.sources() == _swept(graph) == ["a", "b"]
    graph.source("c", torch.zeros(2))  # kept again after the sweep
    assert graph._source_adds == graph.ir.added
    assert graph.sources() == ["a", "b", "c"]


def test_canary_a_derived_tensor_replacing_a_source_drops_it() -> None:
    graph = _graph_with_source()
    graph.source("b", torch.zeros(2))
    assert graph.sources() == ["a", "b"]
    decl = DerivedTensor(name="a", kind="attribute", formula="neg(a)")
    graph.add_derived(DerivedNode("a", None, decl, ""))  # type: ignore[arg-type]
    assert graph.sources() == _swept(graph) == ["b"]
