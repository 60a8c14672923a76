"""Process time of named functions inside one stamped scaling compile (100k derived tensors),
each wrapped by a timer (callees included), medians over N compiles after a 1k warm-up; run
once per tree, the trees alternated by the caller.

    PYTHONPATH=TREE python benchmarks/results/tail61/compile_parts.py ROUNDS [module:Qual.name ...]
"""

from __future__ import annotations

import functools
import gc
import importlib
import statistics
import sys
import time
from typing import Any

from derivgraph.compiler.stamp import stamping
from derivgraph.planner import compile_plan
from derivgraph.tools.bench_scaling import scaling_model, scaling_spec

NAMES = [
    "derivgraph.paths:ModuleOwners.absent",
    "derivgraph.compiler.instances:InstanceTable.column",
    "derivgraph.compiler.bind:_free_names",
    "derivgraph.planner:check_bindings",
    "derivgraph.planner:adopt_or_allocate",
]
times: dict[str, float] = {}


def wrap(name: str) -> None:
    """Wrap ``module:Qual.name`` (where its module or class holds it) with a timer."""
    module, _, qual = name.partition(":")
    *path, last = qual.split(".")
    owner: Any = importlib.import_module(module)
    for part in path:
        owner = getattr(owner, part)
    fn = getattr(owner, last)

    @functools.wraps(fn)
    def timed(*args: Any, **kwargs: Any) -> Any:
        start = time.process_time()
        try:
            return fn(*args, **kwargs)
        finally:
            times[qual] = times.get(qual, 0.0) + time.process_time() - start

    setattr(owner, last, timed)


def main() -> None:
    rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 3
    for name in sys.argv[2:] or NAMES:
        wrap(name)
    spec, got = scaling_spec(), []
    with stamping(True):
        for i in range(rounds + 1):
            model = scaling_model(25000 if i else 250)
            gc.collect()
            times.clear()
            start = time.process_time()
            plan = compile_plan(model, [spec])
            total = time.process_time() - start
            if i:
                got.append({"compile": total, **times})
            del plan, model
    for key in got[0]:
        print(f"{key:40s} {statistics.median(r[key] for r in got):.4f}  "
              f"{[round(r[key], 4) for r in got]}")


if __name__ == "__main__":
    main()
