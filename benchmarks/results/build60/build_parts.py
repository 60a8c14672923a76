"""Process time of named functions inside ``build_graph`` (stamped scaling, 100k derived
tensors), each wrapped by a timer, medians over N rounds after a 1k warm-up; gc off while
``build_graph`` runs, as ``compile_plan`` has it. A wrapped function's own callees are
included in its time; wrapper overhead is ~0.2 us per call (do not wrap per-row functions).

    PYTHONPATH=TREE python benchmarks/results/build60/build_parts.py ROUNDS [module:Qual.name ...]
"""

from __future__ import annotations

import functools
import gc
import importlib
import statistics
import sys
import time
from typing import Any

from derivgraph.compiler import bind, build
from derivgraph.compiler.stamp import stamping
from derivgraph.tools.bench_scaling import scaling_model, scaling_spec

NAMES = [
    "derivgraph.compiler.stamp_params:ParamStamper.resolve",
    "derivgraph.compiler.stamp_params:ParamStamper.proven_after",
    "derivgraph.compiler.build:_derived_columns",
    "derivgraph.compiler.graph:DerivedGraph.add_derived_all",
    "derivgraph.compiler.stamp:Stamper.resolve_bound",
    "derivgraph.compiler.stamp:Stamper._prove",
    "derivgraph.compiler.stamp:Stamper._replay_run",
    "derivgraph.compiler.replay:Replay.run_rows",
    "derivgraph.compiler.build:_check_cycles",
    "derivgraph.compiler.layers:consistent_rows",
    "derivgraph.compiler.build:row_blocks",
    "derivgraph.compiler.build:infer_shapes",
    "derivgraph.compiler.infer:_run_stamped",
    "derivgraph.compiler.infer:_check_limits",
    "derivgraph.compiler.infer:_check_all",
    "derivgraph.compiler.infer:_take_templates",
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
    rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 5
    for name in sys.argv[2:] or NAMES:
        wrap(name)
    spec, got = scaling_spec(), []
    with stamping(True):
        for i in range(rounds + 1):
            model = scaling_model(25000 if i else 250)
            bound = bind.match_specs(model, [spec])
            bind.check_bindings(bound)
            gc.collect()
            gc.disable()
            times.clear()
            start = time.process_time()
            graph = build.build_graph(model, bound)
            total = time.process_time() - start
            gc.enable()
            if i:
                got.append({"build_graph": total, **times})
            del graph, model, bound
    for key in got[0]:
        print(f"{key:40s} {statistics.median(r[key] for r in got):.4f}")


if __name__ == "__main__":
    main()
