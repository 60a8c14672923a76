"""Finer CPU-time phases of ``planner._lower`` over stamped scaling compiles (median of N).

    PYTHONPATH=TREE python3 benchmarks/results/lower61/lower_phases.py [--size 100000] [--repeat 3]
"""

from __future__ import annotations

import argparse
import functools
import gc
import statistics
import sys
import time
from typing import Any

from derivgraph import planner
from derivgraph.compiler import graph as graph_module
from derivgraph.compiler import lower, lower_layers  # noqa: F401
from derivgraph.compiler.stamp import stamping
from derivgraph.runtime import accessors, holders
from derivgraph.runtime import plan as plan_module
from derivgraph.tools.bench_scaling import scaling_model, scaling_spec

PHASES = [
    (planner, "_lower", "lower (all)"),
    (graph_module.DerivedGraph, "source_deps", "  source_deps"),
    (planner, "closed_nodes", "  closed_nodes"),
    (plan_module.Plan, "bind_tensors", "  bind_tensors"),
    (holders.Holders, "walk", "    holders.walk"),
    (accessors, "HopTable", "      HopTable"),
    (holders.Holders, "refresh", "    holders.refresh"),
    (planner, "lower_steps", "  lower_steps"),
    (lower_layers, "provable_layers", "    provable_layers"),
    (lower_layers, "_columns_hold", "      _columns_hold"),
    (plan_module.Plan, "install", "  install"),
    (planner, "_mismatches", "  _mismatches"),
    (planner, "_columns_equal", "    _columns_equal"),
]


def instrument(times: dict[str, float]) -> None:
    for owner, name, label in PHASES:
        fn = getattr(owner, name, None)
        if fn is None:
            continue

        @functools.wraps(fn)
        def timed(*args: Any, __fn: Any = fn, __label: str = label, **kwargs: Any) -> Any:
            start = time.process_time()
            try:
                return __fn(*args, **kwargs)
            finally:
                times[__label] = times.get(__label, 0.0) + time.process_time() - start

        for module in list(sys.modules.values()):  # every module that imported it by name
            if getattr(module, "__name__", "").startswith("derivgraph") \
                    and getattr(module, name, None) is fn:
                setattr(module, name, timed)
        setattr(owner, name, timed)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--size", type=int, default=100000)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    times: dict[str, float] = {}
    instrument(times)
    spec = scaling_spec()
    with stamping(True):
        planner.compile_plan(scaling_model(250), [spec])
    rows = []
    for _ in range(args.repeat):
        model = scaling_model(args.size // 4)
        gc.collect()
        times.clear()
        with stamping(True):
            start = time.process_time()
            plan = planner.compile_plan(model, [spec])
            total = time.process_time() - start
        rows.append({"total": total, **times})
        del plan, model
    for key in rows[0]:
        print(f"{key:28} {statistics.median(r.get(key, 0.0) for r in rows):7.4f}")


if __name__ == "__main__":
    sys.exit(main())
