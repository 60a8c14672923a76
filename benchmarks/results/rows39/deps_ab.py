"""``DerivedGraph.source_deps`` on one built stamped 100k graph: the walk over every node (no
proof of the closed rows current) against the closed rows by position, alternating, 7 rounds.

    PYTHONPATH=TREE python3 deps_ab.py
"""

import gc
import time

from derivgraph.compiler.bind import match_specs
from derivgraph.compiler.build import build_graph
from derivgraph.compiler.layers import closed_layers
from derivgraph.compiler.row_deps import row_source_deps, template_dep_positions
from derivgraph.compiler.stamp import stamping
from derivgraph.tools.bench_scaling import scaling_model, scaling_spec

spec, model = scaling_spec(), scaling_model(25000)
gc.disable()
with stamping(True):
    graph = build_graph(model, match_specs(model, [spec]))
closed_layers(graph)


def plain() -> dict:
    """The walk over every node: this tree's rule with no proof of the rows current (the base
    rule plus one membership test per node in an empty dict)."""
    proof, graph.layer_cache = graph.layer_cache, (-1, None)
    graph._deps_version = -1
    try:
        return graph.source_deps()
    finally:
        graph.layer_cache = proof


def mine() -> dict:
    graph._deps_version = -1
    return graph.source_deps()


assert plain() == mine() and len(mine()) == len(graph.nodes)
res: dict[str, list[float]] = {"plain walk": [], "rows by position": []}
for _ in range(7):
    for label, fn in (("plain walk", plain), ("rows by position", mine)):
        t = time.process_time()
        fn()
        res[label].append(time.process_time() - t)
for k, v in res.items():
    print(f"{k:20s} median {sorted(v)[3]:.3f}  all {[round(x, 3) for x in v]}")  # noqa: T201
version, tables = graph.layer_cache
print(version == graph.ir.version, [(len(t.template), len(t.rows)) for t in tables])  # noqa: T201
print([template_dep_positions(graph.nodes, t.template) for t in tables])  # noqa: T201
t = time.process_time()
d = row_source_deps(graph.nodes, tables)
print("rows", round(time.process_time() - t, 3), len(d))  # noqa: T201
t = time.process_time()
rest = [n for n in graph.ordered() if n not in d]
print("filter", round(time.process_time() - t, 3), len(rest))  # noqa: T201
