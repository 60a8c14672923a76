"""The per-object layers' costs on one built stamped 100k graph (process s, median of 5):
making 100k ``DerivedNode`` and 200k ``ir.Node`` (+ ``Graph.add``), and the sweeps over them.

    PYTHONPATH=TREE python3 micro_objects.py
"""

import gc
import time
from collections.abc import Callable

from derivgraph.compiler.bind import match_specs
from derivgraph.compiler.build import build_graph
from derivgraph.compiler.graph import DerivedNode
from derivgraph.compiler.ir import Graph, Node
from derivgraph.compiler.layers import closed_layers, row_blocks
from derivgraph.compiler.stamp import stamping
from derivgraph.planner import _evaluate_all
from derivgraph.tools.bench_scaling import scaling_model, scaling_spec

spec, model = scaling_spec(), scaling_model(25000)
gc.disable()
with stamping(True):
    bound = match_specs(model, [spec])
    start = time.process_time()
    graph = build_graph(model, bound)
    print("build", time.process_time() - start)  # noqa: T201


def tm(label: str, fn: Callable[[], object], rounds: int = 5) -> None:
    times = []
    for _ in range(rounds):
        t = time.process_time()
        fn()
        times.append(time.process_time() - t)
    print(f"{label:40s} {sorted(times)[rounds // 2]:.3f}")  # noqa: T201


derived = list(graph.derived.values())
ir_nodes = list(graph.nodes.values())


def make_derived() -> None:
    [DerivedNode(n.id, n.bound, n.decl, n.owner_path, device=n.device, params=n.params)
     for n in derived]


def make_nodes() -> None:
    g = Graph()
    for n in ir_nodes:
        g.add(Node(n.id, n.kind, op=n.op, args=n.args, kwargs=n.kwargs, inputs=n.inputs,
                   shape=n.shape, stride=n.stride, dtype=n.dtype, device=n.device))


def deps() -> None:
    graph._deps_version = -1
    graph.source_deps()


def order() -> None:
    graph.ir._order_version = -1
    graph.ir.order()


def closed() -> None:
    graph.layer_cache = (-1, None)
    closed_layers(graph)


def order_blocks() -> None:
    graph.ir._order_version = -1
    graph.ir.order(row_blocks(graph, closed_layers(graph)))


tm("100k DerivedNode", make_derived)
tm("200k Node + Graph.add", make_nodes)
tm("source_deps", deps)
tm("order (plain walk)", order)
tm("closed_layers", closed)
tm("order (blocks)", order_blocks)
sources = dict(graph.read_sources)
tm("evaluate", lambda: _evaluate_all(graph, dict(sources)), 3)
