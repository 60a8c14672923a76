"""Dump every graph node's inferred meta value (shape, dtype, strides, device; derived
tensors also their node device) for the workloads compile37's dump_plans.py compiles, to diff
two trees.

    PYTHONPATH=TREE python3 dump_meta.py OUT_DIR [--size 100000]
"""

import argparse
import pathlib

import torch

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


def show(value) -> str:
    if isinstance(value, torch.Tensor):
        return f"{tuple(value.shape)} {value.dtype} {value.stride()} {value.device}"
    return type(value).__name__


def dump(name: str, plan) -> None:
    graph = plan.graph
    env = graph.meta_env or {}
    lines = [f"{n} env={show(env.get(n))}" for n in graph.nodes]
    lines += [f"{n} meta={show(d.meta)} device={d.device}" for n, d in graph.derived.items()]
    lines += [f"issue {i.rule} {i.message}" for i in graph.issues]
    (out / f"{name}.meta.txt").write_text("\n".join(lines) + "\n")


for on in (True, False):
    with stamping(on):
        dump(f"scaling_{args.size}_{'stamped' if on else 'plain'}",
             compile_plan(scaling_model(args.size // 4), [scaling_spec()]))
for workload in ("reference", "deepseek"):
    model, specs, *_ = _workload("cpu", workload, 61, None)
    dump(workload, compile_plan(model, specs))
