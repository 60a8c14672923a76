"""CPU-time phases of a stamped scaling compile that deps63 touched (median of N), one JSON line.

    PYTHONPATH=TREE python3 benchmarks/results/deps63/deps_phases.py --tag base [--size 100000]
"""

from __future__ import annotations

import argparse
import functools
import gc
import json
import statistics
import sys
import time
from typing import Any

from derivgraph import planner
from derivgraph.compiler import graph as graph_module
from derivgraph.compiler import infer, lower_layers
from derivgraph.compiler.stamp import stamping
from derivgraph.tools.bench_scaling import scaling_model, scaling_spec

PHASES = [
    (graph_module.DerivedGraph, "source_deps", "source_deps"),
    (infer, "infer_shapes", "infer_shapes"),
    (lower_layers, "provable_layers", "provable_layers"),
    (planner, "_lower", "_lower"),
]


def instrument(times: dict[str, float]) -> None:
    """Wrap each phase (and every module's name for it) in a process-time timer."""
    for owner, name, label in PHASES:
        fn = getattr(owner, name)

        @functools.wraps(fn)
        def timed(*args: Any, __fn: Any = fn, __label: str = label, **kwargs: Any) -> Any:
            start = time.process_time()
            try:
                return __fn(*args, **kwargs)
            finally:
                times[__label] = times.get(__label, 0.0) + time.process_time() - start

        for module in list(sys.modules.values()):
            if getattr(module, "__name__", "").startswith("derivgraph") \
                    and getattr(module, name, None) is fn:
                setattr(module, name, timed)
        setattr(owner, name, timed)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--size", type=int, default=100000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--tag", default="")
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
    out = {"tag": args.tag, "size": args.size, "repeat": args.repeat}
    out.update({k: round(statistics.median(r.get(k, 0.0) for r in rows), 5) for k in rows[0]})
    print(json.dumps(out))


if __name__ == "__main__":
    main()
