"""In process: each stage-1 reader (and each compile-path reader ``_compile`` moved to the
generic entries), its per-entry form (the base's expression, inline) vs the
column answer of this tree, on one stamped scaling plan (100k derived tensors), alternating,
``--rounds`` rounds, process CPU seconds; GC off as in ``compile_plan``.

    PYTHONPATH=$PWD /work/venv/bin/python benchmarks/results/entries49/micro_readers.py \
        --size 100000 --rounds 11
"""

from __future__ import annotations

import argparse
import gc
import operator
import statistics
import time
from collections.abc import Callable
from itertools import compress
from typing import Any

import torch

from derivgraph.compiler.stamp import stamping
from derivgraph.planner import compile_plan
from derivgraph.runtime.containers import collect_containers
from derivgraph.spec.kinds import TensorKind
from derivgraph.tools.bench_scaling import scaling_model, scaling_spec


def _old_readers(plan: Any) -> dict[str, Callable[[], Any]]:
    entries = plan.entries
    in_columns = {i for c in entries.columns for i in c.ids}
    return {
        "compile: others": lambda: [e for i, e in entries.items() if i not in in_columns],
        "compile: view check": lambda: [e for e in entries.values()
                                        if e.node.kind is TensorKind.VIEW],
        "compile: containers": lambda: collect_containers(entries.values(), plan.model),
        "compile: startup rest": lambda: list(compress(entries.values(), map(
            operator.not_, map(in_columns.__contains__, entries)))),
        "session spec names": lambda: len({e.node.bound.spec.name for e in entries.values()}),
        "guard declared ids": lambda: {id(t) for t in (e.storage for e in entries.values())
                                       if isinstance(t, torch.Tensor)},
        "log adopted count": lambda: sum(e.adopted for e in entries.values()),
        "Plan.declared": lambda: {k: e.storage for k, e in entries.items()},
        "Plan.not_refillable": lambda: [k for k, e in entries.items()
                                        if e.node.kind is TensorKind.SCALAR],
        "Holders.moved keys": lambda: [k for k, e in entries.items()
                                       if e.node.kind is not TensorKind.SCALAR],
    }


def _new_readers(plan: Any) -> dict[str, Callable[[], Any]]:
    generic = plan.entries.generic
    return {
        "compile: others": lambda: list(generic.values()),
        "compile: view check": lambda: [e for e in generic.values()
                                        if e.node.kind is TensorKind.VIEW],
        "compile: containers": lambda: collect_containers(list(generic.values()), plan.model),
        "compile: startup rest": lambda: list(generic.values()),
        "session spec names": lambda: len(plan.entries.spec_names()),
        "guard declared ids": lambda: {id(t) for t in plan.declared_storages()
                                       if isinstance(t, torch.Tensor)},
        "log adopted count": lambda: plan.entries.adopted(),
        "Plan.declared": plan.declared,
        "Plan.not_refillable": plan.not_refillable,
        "Holders.moved keys": plan.holders._not_scalars,
    }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--size", type=int, default=100000)
    parser.add_argument("--rounds", type=int, default=11)
    args = parser.parse_args()
    with stamping(True):
        plan = compile_plan(scaling_model(args.size // 4), [scaling_spec()])
    print(f"plan: {len(plan)} entries, {len(plan.entries.columns)} columns, "
          f"{len(plan.entries.generic)} generic")
    old, new = _old_readers(plan), _new_readers(plan)
    for name in old:
        a, b = old[name](), new[name]()
        print(f"{name}: equal={a == b}")
    gc.disable()
    times: dict[str, tuple[list[float], list[float]]] = {n: ([], []) for n in old}
    for _ in range(args.rounds):
        for name in old:
            for fn, out in ((old[name], times[name][0]), (new[name], times[name][1])):
                t = time.process_time()
                fn()
                out.append(time.process_time() - t)
    print(f"{'reader':22s} {'per-entry s':>12s} {'column s':>10s} {'new faster':>10s}")
    for name, (a, b) in times.items():
        wins = sum(y < x for x, y in zip(a, b))
        print(f"{name:22s} {statistics.median(a):12.4f} {statistics.median(b):10.4f} "
              f"{wins:>4d}/{len(a)}")


if __name__ == "__main__":
    main()
