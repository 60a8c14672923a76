"""Process time of named functions inside one stamped ``build_graph`` (wrappers, no line
profiler: the profiler's call hooks inflate ``map``-driven constructors), medians of N runs.

    PYTHONPATH=TREE python parts.py [--size 100000] [--rounds 5] [--funcs mod:Qual.name,...]
"""

from __future__ import annotations

import argparse
import functools
import gc
import importlib
import statistics
import time
from typing import Any

FUNCS = ("derivgraph.compiler.stamp:Stamper.resolve_bound,"
         "derivgraph.compiler.stamp:Stamper._replay_run,"
         "derivgraph.compiler.stamp:Stamper._prove,"
         "derivgraph.compiler.replay:Replay.run_rows,"
         "derivgraph.compiler.graph:DerivedGraph.add_made,"
         "derivgraph.compiler.graph:DerivedGraph.place_input_each,"
         "derivgraph.compiler.graph:DerivedGraph.is_fresh,"
         "derivgraph.compiler.build:_derived_columns,"
         "derivgraph.compiler.build:_check_cycles,"
         "derivgraph.compiler.layers:closed_layers,"
         "derivgraph.compiler.layers:row_blocks,"
         "derivgraph.compiler.instances:consistent_rows,"
         "derivgraph.compiler.ir:Graph.order,"
         "derivgraph.compiler.build:infer_shapes")


def wrap(spec: str, times: dict[str, float]) -> None:
    mod, name = spec.split(":")
    owner: Any = importlib.import_module(mod)
    parts = name.split(".")
    for part in parts[:-1]:
        owner = getattr(owner, part)
    fn = getattr(owner, parts[-1])
    label = name

    @functools.wraps(fn)
    def timed(*args: Any, **kwargs: Any) -> Any:
        start = time.process_time()
        try:
            return fn(*args, **kwargs)
        finally:
            times[label] = times.get(label, 0.0) + time.process_time() - start

    setattr(owner, parts[-1], timed)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--size", type=int, default=100000)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--funcs", default=FUNCS)
    args = parser.parse_args()
    times: dict[str, float] = {}
    for spec in args.funcs.split(","):
        wrap(spec, times)
    from derivgraph.compiler.bind import check_bindings, match_specs
    from derivgraph.compiler.build import build_graph
    from derivgraph.tools.bench_scaling import scaling_model, scaling_spec

    got: list[dict[str, float]] = []
    for i in range(args.rounds + 1):
        model = scaling_model(max(1, (args.size if i else 4000) // 4))
        bound = match_specs(model, [scaling_spec()])
        check_bindings(bound)
        gc.collect()
        times.clear()
        gc.disable()
        start = time.process_time()
        build_graph(model, bound)
        total = time.process_time() - start
        gc.enable()
        if i:
            got.append({"build_graph": total, **times})
    print(f"medians of {args.rounds} (process s), size {args.size}")
    for key in got[0]:
        print(f"{key:34s} {statistics.median(r[key] for r in got):.4f}")


if __name__ == "__main__":
    main()
