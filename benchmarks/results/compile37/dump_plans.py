"""Dump what a compile produced, to diff two trees: the graph (nodes, kinds, ops, inputs),
the topological order, the steps, the printed pass, the entries (slot, adopted, storage
layout) and every node's inferred meta (shape, dtype, strides, device; derived tensors also
their node device: infer50's ``dump_meta.py``, folded in), for the scaling workload (stamped and
not) and the bench's reference and deepseek workloads (CPU).

    PYTHONPATH=TREE python3 dump_plans.py OUT_DIR [--size 100000]
"""

import argparse
import pathlib
import re

import torch

import derivgraph
from derivgraph.compiler.stamp import stamping
from derivgraph.planner import compile_plan
from derivgraph.tools.bench import _workload
from derivgraph.tools.bench_scaling import scaling_model, scaling_spec

parser = argparse.ArgumentParser()
parser.add_argument("out")
parser.add_argument("--size", type=int, default=100000)
args = parser.parse_args()
out = pathlib.Path(args.out)
out.mkdir(parents=True, exist_ok=True)
TREE = str(pathlib.Path(derivgraph.__file__).parent.parent)  # spec locations name the tree


def show(value) -> str:
    if isinstance(value, torch.Tensor):
        return f"{tuple(value.shape)} {value.dtype} {value.stride()} {value.device}"
    return type(value).__name__


def dump(name: str, plan) -> None:
    graph = plan.graph
    nodes = [f"{n.id} {n.kind} {n.op} {n.inputs}" for n in graph.nodes.values()]
    # generated file names carry a process-wide serial: not part of the pass
    source = re.sub(r"#\d+>", "#N>", plan.source()).replace(TREE, "TREE")
    (out / f"{name}.graph.txt").write_text("\n".join(nodes) + "\n")
    (out / f"{name}.order.txt").write_text("\n".join(graph.ordered()) + "\n")
    (out / f"{name}.steps.txt").write_text("\n".join(map(repr, plan.steps)) + "\n")
    (out / f"{name}.pass.txt").write_text(source)
    entries = [f"{e.id} {e.slot} {e.adopted} {type(e.storage).__name__} "
               f"{getattr(e.storage, 'shape', '')} {getattr(e.storage, 'dtype', '')}"
               for e in plan.entries.values()]
    (out / f"{name}.entries.txt").write_text("\n".join(entries) + "\n")
    env = getattr(graph, "meta_env", None) or {}
    meta = [f"{n} env={show(env.get(n))}" for n in graph.nodes]
    meta += [f"{n} meta={show(d.meta)} device={d.device}" for n, d in graph.derived.items()]
    meta += [f"issue {i.rule} {i.message}" for i in graph.issues]
    (out / f"{name}.meta.txt").write_text("\n".join(meta) + "\n")


for on in (True, False):
    with stamping(on):
        dump(f"scaling_{args.size}_{'stamped' if on else 'plain'}",
             compile_plan(scaling_model(args.size // 4), [scaling_spec()]))
for workload in ("reference", "deepseek"):
    model, specs, *_ = _workload("cpu", workload, 61, None)
    dump(workload, compile_plan(model, specs))
