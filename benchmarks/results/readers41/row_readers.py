"""Who reads a stamped row's ``ir.Node`` once resolution is over (the readers stage 2 must move
to the tables before rows can leave ``Graph.nodes``): one stamped compile of the scaling
workload (2500 layers x 4 derived), ``Graph.nodes`` swapped, when the stamper is done, for a
dict that counts, per calling line, the lookups of a row's node (``[]``, ``get``, ``in``) and
the sweeps over every node; the rest of ``build_graph`` (the cycle check, shape inference)
apart from what follows it.

    PYTHONPATH=TREE python3 row_readers.py [LAYERS]
"""

import sys
from collections import Counter
from typing import Any

from derivgraph import planner
from derivgraph.compiler import build
from derivgraph.compiler.layers import layer_nodes
from derivgraph.compiler.stamp import stamping
from derivgraph.tools.bench_scaling import scaling_model, scaling_spec

ROWS: set[str] = set()
LOOKUPS: Counter = Counter()
SWEEPS: Counter = Counter()
HERE = ("compiler/ir.py", "readers41/row_readers.py")


def _site(depth: int = 2) -> str:
    frame = sys._getframe(depth)
    while frame.f_code.co_filename.endswith(HERE):
        frame = frame.f_back
    name = frame.f_code.co_filename.split("derivgraph/", 1)[-1]
    return f"{name}:{frame.f_lineno} {frame.f_code.co_name}"


def _key() -> str:
    return f"{PHASE[0]:34s} {_site(3)}"


class Counting(dict):
    def __getitem__(self, key: str) -> Any:
        if key in ROWS:
            LOOKUPS[_key()] += 1
        return dict.__getitem__(self, key)

    def get(self, key: str, default: Any = None) -> Any:
        if key in ROWS:
            LOOKUPS[_key()] += 1
        return dict.get(self, key, default)

    def __contains__(self, key: object) -> bool:
        if key in ROWS:
            LOOKUPS[_key()] += 1
        return dict.__contains__(self, key)

    def __iter__(self) -> Any:
        SWEEPS[_key()] += 1
        return dict.__iter__(self)

    def items(self) -> Any:
        SWEEPS[_key()] += 1
        return dict.items(self)

    def values(self) -> Any:
        SWEEPS[_key()] += 1
        return dict.values(self)


PHASE = ["build_graph (after resolution)"]
check_cycles, build_graph = build._check_cycles, planner.build_graph


def counted_check(graph: Any) -> None:
    """The stamper is done: every row's ids are in its table."""
    ROWS.update(layer_nodes(graph.stamps))
    graph.ir.nodes = Counting(graph.ir.nodes)
    check_cycles(graph)


def counted_build(model: Any, bound: Any) -> Any:
    graph = build_graph(model, bound)
    PHASE[0] = "after build_graph"
    return graph


build._check_cycles, planner.build_graph = counted_check, counted_build
n = int(sys.argv[1]) if len(sys.argv) > 1 else 2500
with stamping(True):
    plan = planner.compile_plan(scaling_model(n), [scaling_spec()])
total = len(plan.graph.nodes)
print(f"{n} layers: {total} nodes, {len(ROWS)} in stamped rows (the nodes stage 2 leaves out)")
print("row-node lookups, by phase and calling line (count, per row node):")
for site, k in LOOKUPS.most_common():
    print(f"  {k:8d} {k / len(ROWS):5.2f}  {site}")
print("sweeps over every node, by phase and calling line:")
for site, k in SWEEPS.most_common():
    print(f"  {k:8d}  {site}")
