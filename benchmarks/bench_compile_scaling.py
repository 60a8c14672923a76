"""Compile time against the number of derived tensors (1k, 10k, 100k).

A stack of small layers, each with four derived tensors (a reciprocal, a product, an int64
constant and an alias), compiled twice in one process: ``cold`` (first compile: lazy imports and
caches) and ``warm``.

    python3 benchmarks/bench_compile_scaling.py --sizes 1000 10000 100000
"""

from __future__ import annotations

import argparse
import json
import time

import torch
from torch import nn

from derivgraph import DerivedTensor, Spec, Target, compile_plan


class Layer(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.scale = nn.Parameter(torch.rand(8) + 0.5, requires_grad=False)
        self.weight = nn.Parameter(torch.rand(8), requires_grad=False)


class Stack(nn.Module):
    def __init__(self, n: int) -> None:
        super().__init__()
        self.layers = nn.ModuleList(Layer() for _ in range(n))


SPEC = Spec(name="scaling", target=Target(module_class=["Layer"]),
            params={"E": "scale.shape[0]"},
            derived=[DerivedTensor(name="inv", kind="attribute", formula="1.0 / scale"),
                     DerivedTensor(name="prod", kind="attribute", formula="scale * weight"),
                     DerivedTensor(name="strides", kind="attribute",
                                   formula="full([E], 7, dtype=int64)"),
                     DerivedTensor(name="scale_alias", kind="alias", of="scale")])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--sizes", type=int, nargs="+", default=[1000, 10000, 100000])
    args = parser.parse_args()
    rows = []
    for size in args.sizes:
        times = []
        for _ in range(2):
            model = Stack(size // 4)
            start = time.perf_counter()
            plan = compile_plan(model, [SPEC])
            times.append(time.perf_counter() - start)
        rows.append({"derived": len(plan.entries), "nodes": len(plan.graph.nodes),
                     "first_s": round(times[0], 3), "second_s": round(times[1], 3),
                     "us_per_derived": round(times[1] / len(plan.entries) * 1e6, 1)})
        print(json.dumps(rows[-1]), flush=True)  # noqa: T201 - a benchmark script


if __name__ == "__main__":
    main()
