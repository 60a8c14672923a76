"""Entry columns on against off, in one process: the CPU time of the binding phases they change.

Compiles the scaling workload (stamping on) alternately with entry columns (the default) and
without (``planner.entry_columns`` answering no column, so every entry takes the generic
per-entry path), after one untimed warm-up compile; both give the same plan. Times (process
CPU seconds) the whole compile and the phases the columns change: ``entry_columns``,
``_materialize``, ``Holders.rebind_entries``, ``_record_startup`` and ``Holders.bind`` (the
holder table). Medians of ``--repeat`` compiles each.

    python3 benchmarks/bench_entry_columns.py --size 100000 --repeat 3 --json out.json
"""

from __future__ import annotations

import statistics
from typing import Any

from _compile_cli import compile_parser, write_json
from bench_compile_phases import _instrument, timed_compile

import derivgraph.planner as planner
from derivgraph.runtime.holders import Holders
from derivgraph.tools.bench_scaling import scaling_model, scaling_spec

PHASES = [(owner, name, name) for owner, name in (
    (planner, "entry_columns"), (planner, "_materialize"), (Holders, "rebind_entries"),
    (planner, "_record_startup"), (Holders, "bind"))]


def main() -> None:
    parser = compile_parser(__doc__)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    times: dict[str, float] = {}
    _instrument(times, PHASES)
    with_columns = planner.entry_columns
    spec, layers = scaling_spec(), max(1, args.size // 4)
    planner.compile_plan(scaling_model(layers), [spec])  # warm-up
    runs: dict[str, list[dict[str, float]]] = {"columns": [], "no_columns": []}
    for _ in range(args.repeat):
        for label in runs:
            planner.entry_columns = with_columns if label == "columns" else (
                lambda *a: [])
            model = scaling_model(layers)
            plan, total = timed_compile(model, spec, times, stamped=True)
            bound = sum(times.values())
            runs[label].append({"total": total, **times, "binding phases": bound})
            del plan, model
    planner.entry_columns = with_columns
    result: dict[str, Any] = {"size": args.size, "repeat": args.repeat, "runs": runs}
    for label, rows in runs.items():
        result[label] = {k: round(statistics.median(r.get(k, 0.0) for r in rows), 4)
                         for k in rows[0]}
    print(f"{'phase (process s, median)':28}  columns  no columns")  # noqa: T201
    for key in result["no_columns"]:
        print(f"{key:28}  {result['columns'].get(key, 0.0):7.3f}  "  # noqa: T201
              f"{result['no_columns'][key]:7.3f}")
    write_json(result, args.json)


if __name__ == "__main__":
    main()
