"""Process time of the compile's front at 100k derived tensors (the stamped scaling workload):
bind (``match_specs``, ``check_bindings``), ``build_graph``, ``compile_folds`` and the
evaluation (``_evaluate_all``, after ``_record_sources`` as ``planner._prepare`` calls them),
with named functions inside them wrapped by timers; medians over N rounds after a small
warm-up, gc off for the whole front as ``compile_plan`` has it. A wrapped function's callees
are in its time; do not wrap per-row functions (~0.2 us a call).

    PYTHONPATH=TREE python benchmarks/results/front62/front_parts.py ROUNDS [module:Qual.name ...]
"""

from __future__ import annotations

import functools
import gc
import importlib
import statistics
import sys
import time
from typing import Any

from derivgraph import planner
from derivgraph.column_layout import ColumnLayouts
from derivgraph.compiler import bind, build, fold
from derivgraph.compiler.stamp import stamping
from derivgraph.tools.bench_scaling import scaling_model, scaling_spec

NAMES = [
    "derivgraph.compiler.stamp_params:ParamStamper.resolve",
    "derivgraph.compiler.build:_derived_columns",
    "derivgraph.compiler.graph:DerivedGraph.add_derived_all",
    "derivgraph.compiler.stamp:Stamper._prove",
    "derivgraph.compiler.stamp:Stamper._replay_run",
    "derivgraph.compiler.replay:Replay.run_rows",
    "derivgraph.compiler.graph:DerivedGraph.is_fresh",
    "derivgraph.compiler.graph:DerivedGraph.add_made",
    "derivgraph.compiler.build:_check_cycles",
    "derivgraph.compiler.layers:consistent_rows",
    "derivgraph.compiler.build:row_blocks",
    "derivgraph.compiler.build:infer_shapes",
    "derivgraph.compiler.infer:_run_stamped",
    "derivgraph.compiler.infer:_check_limits",
    "derivgraph.compiler.infer:_take_templates",
    "derivgraph.compiler.columns:_column",
    "derivgraph.compiler.columns:fill_derived",
    "derivgraph.compiler.columns:_record",
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


def _timed(label: str, fn: Any, *args: Any) -> Any:
    start = time.process_time()
    try:
        return fn(*args)
    finally:
        times[label] = time.process_time() - start


def main() -> None:
    rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 5
    for name in sys.argv[2:] or NAMES:
        wrap(name)
    spec, got = scaling_spec(), []
    with stamping(True):
        for i in range(rounds + 1):
            model = scaling_model(25000 if i else 250)
            gc.collect()
            gc.disable()
            times.clear()
            bound = _timed("bind: match_specs", bind.match_specs, model, [spec])
            _timed("bind: check_bindings", bind.check_bindings, bound)
            graph = _timed("build_graph", build.build_graph, model, bound)
            _timed("compile_folds", fold.compile_folds, model, bound, graph.issues,
                   graph.derived)
            book = ColumnLayouts()
            planner._record_sources(book, graph)
            sources, graph.read_sources = graph.read_sources, {}
            _timed("evaluate", planner._evaluate_all, graph, sources, book)
            gc.enable()
            if i:
                front = times["bind: match_specs"] + times["bind: check_bindings"] + \
                    times["build_graph"] + times["evaluate"]
                got.append({"bind + build_graph + evaluate": front, **times})
            del graph, model, bound, book, sources
    for key in got[0]:
        print(f"{key:40s} {statistics.median(r[key] for r in got):.4f}")


if __name__ == "__main__":
    main()
