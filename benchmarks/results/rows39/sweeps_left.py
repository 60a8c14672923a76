"""In-process cost of the all-node sweeps left on the stamped 100k compile (one compiled plan,
process s, median of 5): what a stage-1 position rule could still shorten.

    PYTHONPATH=TREE python3 sweeps_left.py
"""

import gc
import time

import torch

from derivgraph.compiler.ir import NodeKind
from derivgraph.compiler.layers import closed_layers, layer_nodes
from derivgraph.compiler.stamp import stamping
from derivgraph.planner import compile_plan
from derivgraph.spec.kinds import HELD_KINDS
from derivgraph.tools.bench_scaling import scaling_model, scaling_spec

spec = scaling_spec()
compile_plan(scaling_model(250), [spec])
model = scaling_model(25000)
gc.disable()
with stamping(True):
    plan = compile_plan(model, [spec])
graph = plan.graph
values = {n: torch.zeros(1) for n in graph.nodes}
deps = graph.source_deps()


def constants() -> object:  # planner._lower
    return {n: values[n] for n, node in graph.nodes.items()
            if node.kind is NodeKind.OP and not deps[n] and isinstance(values.get(n), torch.Tensor)}


def constant_entries() -> object:  # planner._lower
    return [n for n, e in plan.entries.items()
            if e.node.kind in HELD_KINDS and e.node.input is not None and not deps[n]]


def sources() -> object:
    graph._sources_version = -1
    return graph.sources()


def held_rest() -> object:  # infer._run_stamped, lower.Lowerer.lower
    held = layer_nodes(closed_layers(graph))
    return [n for n in graph.ordered() if n not in held]


def derived_loop() -> None:  # infer's loops over graph.derived
    for node in graph.derived.values():
        if node.input is None:
            pass


res: dict[str, list[float]] = {}
for _ in range(5):
    for f in (constants, constant_entries, sources, held_rest, derived_loop):
        t = time.process_time()
        f()
        res.setdefault(f.__name__, []).append(time.process_time() - t)
for k, v in res.items():
    print(f"{k:20s} {sorted(v)[2]:.3f}")  # noqa: T201
