"""Finer CPU-time phases of ``planner._lower`` and the column evaluation over stamped scaling compiles (median of N).

    PYTHONPATH=TREE python3 benchmarks/results/lower64/lower_phases.py [--size 100000] [--repeat 3]
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
from derivgraph.compiler import codegen, columns, layers, lower, lower_layers, schedule, schedule_layers  # noqa: F401
from derivgraph.compiler import graph as graph_module
from derivgraph.compiler.stamp import stamping
from derivgraph.runtime import accessors, holders
from derivgraph.runtime import plan as plan_module
from derivgraph.runtime import storage as storage_module
from derivgraph.tools.bench_scaling import scaling_model, scaling_spec

PHASES = [
    (planner, "_lower", "lower (all)"),
    (graph_module.DerivedGraph, "source_deps", "  source_deps"),
    (plan_module.Plan, "bind_tensors", "  bind_tensors"),
    (holders.Holders, "walk", "    holders.walk"),
    (accessors, "HopTable", "      HopTable"),
    (holders.Holders, "refresh", "    holders.refresh"),
    (accessors, "holders_of", "      holders_of"),
    (accessors, "HolderTable", "      HolderTable"),
    (holders, "recorded_ptrs", "    recorded_ptrs"),
    (storage_module.BoundTensors, "bind", "    BoundTensors.bind"),
    (planner, "lower_steps", "  lower_steps"),
    (lower_layers, "provable_layers", "    provable_layers"),
    (lower_layers, "_columns_hold", "      _columns_hold"),
    (lower_layers, "column_addresses", "        column_addresses"),
    (lower, "_step_order", "    _step_order"),
    (storage_module.BoundTensors, "alloc_stages", "  alloc_stages"),
    (plan_module.Plan, "install", "  install"),
    (codegen, "build_program", "    build_program"),
    (schedule, "compact_levels", "      compact_levels"),
    (schedule_layers, "same_key_facts", "      same_key_facts"),
    (codegen, "_bound_keys", "      _bound_keys"),
    (planner, "_mismatches", "  _mismatches"),
    (planner, "_columns_equal", "    _columns_equal"),
    (layers, "closed_layers", "closed_layers (first call)"),
    (columns, "evaluate_columns", "evaluate_columns"),
    (columns, "_column", "  _column"),
    (columns, "_operands", "    _operands"),
    (columns, "_record", "  _record"),
    (columns, "fill_derived", "fill_derived"),
    (plan_module.Plan, "prepare", "prepare"),
    (codegen, "_emit_flat", "_emit_flat (all calls)"),
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


def time_pass_runs(times: dict[str, float]) -> None:
    """Each program ``Plan.install`` returns runs its ``fn`` under a timer (the compile's
    run of the pass: the bit check's evidence)."""
    install = plan_module.Plan.install

    @functools.wraps(install)
    def timed_install(*args: Any, **kwargs: Any) -> Any:
        program = install(*args, **kwargs)
        fn = program.fn

        def run() -> Any:
            start = time.process_time()
            try:
                return fn()
            finally:
                label = "  pass run (program.fn)"
                times[label] = times.get(label, 0.0) + time.process_time() - start

        program.fn = run
        return program

    plan_module.Plan.install = timed_install


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--size", type=int, default=100000)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    times: dict[str, float] = {}
    instrument(times)
    time_pass_runs(times)
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
