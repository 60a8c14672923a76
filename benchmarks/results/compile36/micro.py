"""In-process A/B of the functions this branch changed, on one compiled 100k plan.

Each base function is the base tree's module file loaded by path (its imports come from this
tree, so only the changed function body differs); base and this tree alternate ``--rounds``
times on the same inputs; process seconds, medians. Run from the worktree root:

    PYTHONPATH=. python3 benchmarks/results/compile36/micro.py --base /tmp/base_compile36
"""

import argparse
import gc
import importlib.util
import json
import statistics
import sys
import time

from derivgraph.compiler import build, copies, layers
from derivgraph.compiler.bind import match_specs
from derivgraph.planner import compile_plan
from derivgraph.runtime import accessors
from derivgraph.tools.bench_scaling import scaling_model, scaling_spec


def load(base: str, rel: str, name: str):
    spec = importlib.util.spec_from_file_location(name, f"{base}/{rel}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


parser = argparse.ArgumentParser()
parser.add_argument("--base", required=True)
parser.add_argument("--size", type=int, default=100000)
parser.add_argument("--rounds", type=int, default=7)
args = parser.parse_args()
b_copies = load(args.base, "derivgraph/compiler/copies.py", "base_copies")
b_layers = load(args.base, "derivgraph/compiler/layers.py", "base_layers")
b_access = load(args.base, "derivgraph/runtime/accessors.py", "base_accessors")
b_stamp = load(args.base, "derivgraph/compiler/stamp.py", "base_stamp")
b_replay = load(args.base, "derivgraph/compiler/replay.py", "base_replay")
b_stamp.Replay = b_replay.Replay
b_build = load(args.base, "derivgraph/compiler/build.py", "base_build")
b_build.Stamper = b_stamp.Stamper  # the base's stamping (its replay reads every source)

spec = scaling_spec()
model = scaling_model(args.size // 4)
plan = compile_plan(model, [spec])
ctx, steps, graph = plan.tensors, plan.steps, plan.graph
tables = layers.closed_layers(graph)
holders = plan.holders
paths = [s.rpartition(".")[0] for s, *_ in holders._sources] + \
    [e.node.owner_path for e in holders.entries.values()]
fresh = scaling_model(args.size // 4)
bound = match_specs(fresh, [spec])

cases = {
    "stage_directly": (lambda: b_copies.stage_directly(ctx, steps),
                       lambda: copies.stage_directly(ctx, steps)),
    "held layer nodes": (lambda: set(b_layers.layer_map(tables)),
                         lambda: layers.layer_nodes(tables)),
    "HopTable (owner walk)": (lambda: b_access.HopTable(model, paths),
                              lambda: accessors.HopTable(model, paths)),
    "build_graph": (lambda: b_build.build_graph(fresh, bound),
                    lambda: build.build_graph(fresh, bound)),
}
assert cases["held layer nodes"][0]() == cases["held layer nodes"][1]()
assert b_access.HopTable(model, paths).prefixes == accessors.HopTable(model, paths).prefixes
gb, gm = cases["build_graph"][0](), cases["build_graph"][1]()
assert list(gb.nodes) == list(gm.nodes) and gb.stamped == gm.stamped
assert [(n.shape, n.stride, n.dtype, n.device) for n in gb.nodes.values()] == \
    [(n.shape, n.stride, n.dtype, n.device) for n in gm.nodes.values()]
del gb, gm
gc.disable()
out = {}
for name, (base, mine) in cases.items():
    times = {"base": [], "mine": []}
    for _ in range(args.rounds):
        for tag, fn in (("base", base), ("mine", mine)):
            gc.collect()
            start = time.process_time()
            result = fn()
            times[tag].append(time.process_time() - start)
            del result
    out[name] = {tag: round(statistics.median(v), 4) for tag, v in times.items()}
    out[name]["pairs"] = [(round(a, 4), round(b, 4)) for a, b in zip(times["base"], times["mine"])]
    print(f"{name:24} base {out[name]['base']:.4f}  mine {out[name]['mine']:.4f}")  # noqa: T201
print(json.dumps(out))  # noqa: T201
