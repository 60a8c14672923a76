"""Per-phase CPU time of ``compile_plan`` on the scaling workload, stamping on and off.

One process; compiles alternate (stamping on, then off) on fresh models of the scaling workload
(:mod:`derivgraph.tools.bench_scaling`), after one untimed warm-up compile. Each phase is the
process time spent in one compile function (wrapped for the run); nested phases are also
counted in their parent (``build_graph`` holds ``stamp`` and ``infer_shapes``; ``_lower`` holds
``bind_tensors`` (which holds ``holders.bind``), ``lower_steps`` and ``install``; ``prepare``
holds the refill table). A phase the tree lacks is not timed. Medians of ``--repeat`` runs.

    python3 benchmarks/bench_compile_phases.py --size 100000 --repeat 3 --json out.json
"""

from __future__ import annotations

import functools
import gc
import statistics
import time
from typing import Any

from _compile_cli import compile_parser, write_json

import derivgraph.adoption as adoption
import derivgraph.compiler.build as build
import derivgraph.planner as planner
import derivgraph.runtime.plan as engine
from derivgraph.compiler.stamp import Stamper, stamping
from derivgraph.compiler.stamp_params import ParamStamper
from derivgraph.runtime.holders import Holders
from derivgraph.runtime.plan import Plan
from derivgraph.tools.bench_scaling import scaling_model, scaling_spec

PHASES = [
    (planner, "match_specs", "bind: match_specs"),
    (planner, "check_bindings", "bind: check_bindings"),
    (planner, "build_graph", "build_graph"),
    (ParamStamper, "resolve", "  build: resolve_params"),
    (Stamper, "resolve_bound", "  build: resolve / stamp"),
    (build, "infer_shapes", "  build: infer_shapes"),
    (build, "_check_cycles", "  build: check_cycles"),
    (build, "index_issues", "  build: index_issues"),
    (planner, "_evaluate_all", "evaluate"),
    (planner, "adopt_or_allocate", "adopt_or_allocate"),
    (adoption, "source_storages", "  adopt: source_storages"),
    (planner.ModelTransaction, "__init__", "transaction"),
    (planner, "entry_columns", "entry_columns"),
    (planner, "_materialize", "materialize"),
    (Holders, "rebind_entries", "holders: rebind_entries"),
    (planner, "collect_containers", "collect_containers"),
    (planner, "_record_startup", "record_startup"),
    (planner, "_lower", "lower (all)"),
    (Plan, "prepare", "prepare (all)"),
    (Holders, "sources_intact", "  prepare: sources_intact"),
    (engine, "RefillTable", "  prepare: RefillTable"),
    (Holders, "bind", "  bind: holders.bind"),
    (Plan, "bind_tensors", "  lower: bind_tensors"),
    (planner, "lower_steps", "  lower: lower_steps"),
    (Plan, "install", "  lower: install (codegen)"),
    (planner, "_mismatches", "  lower: bit check (_mismatches)"),
]


def _instrument(times: dict[str, float], phases: list | None = None) -> None:
    """Wrap each (owner, name, label) phase so its CPU time adds up in ``times[label]``."""
    for owner, name, label in PHASES if phases is None else phases:
        fn = getattr(owner, name, None)
        if fn is None:  # a phase this tree does not have (another tree's script, copied)
            continue

        @functools.wraps(fn)
        def timed(*args: Any, __fn: Any = fn, __label: str = label, **kwargs: Any) -> Any:
            start = time.process_time()
            try:
                return __fn(*args, **kwargs)
            finally:
                times[__label] = times.get(__label, 0.0) + time.process_time() - start

        setattr(owner, name, timed)


def timed_compile(model: Any, spec: Any, times: dict[str, float], *,
                  stamped: bool) -> tuple[Any, float]:
    """Compile ``model`` once after a collection, phases cleared: the plan and its CPU seconds."""
    gc.collect()
    times.clear()
    with stamping(stamped):
        start = time.process_time()
        plan = planner.compile_plan(model, [spec])
        return plan, time.process_time() - start


def main() -> None:
    parser = compile_parser(__doc__)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    times: dict[str, float] = {}
    _instrument(times)
    spec, layers = scaling_spec(), max(1, args.size // 4)
    planner.compile_plan(scaling_model(layers), [spec])  # warm-up: imports and caches
    runs: dict[str, list[dict[str, float]]] = {"stamped": [], "plain": []}
    for _ in range(args.repeat):
        for label, on in (("stamped", True), ("plain", False)):
            model = scaling_model(layers)
            plan, total = timed_compile(model, spec, times, stamped=on)
            runs[label].append({"total": total, **times, "stamped_layers": plan.graph.stamped})
            del plan, model
    result: dict[str, Any] = {"size": args.size, "repeat": args.repeat}
    for label, rows in runs.items():
        result[label] = {k: round(statistics.median(r.get(k, 0.0) for r in rows), 4)
                         for k in rows[0]}
    width = max(len(label) for _, _, label in PHASES)
    print(f"{'phase (process s, median)':{width}}  stamped    plain")  # noqa: T201
    for key in result["stamped"]:
        print(f"{key:{width}}  {result['stamped'][key]:7.3f}  {result['plain'][key]:7.3f}")  # noqa: T201
    write_json(result, args.json)


if __name__ == "__main__":
    main()
