"""In-process A/B of the whole 100k compile with ``filled_column`` on (this tree) and off
(``planner.filled_column`` answering None: every column allocated with ``empty_like`` and
filled by the one copy, as the base does), alternating per round (order reversed every other
round): the compile's process time and ``Plan.prepare``'s (the refill table reads every new
storage: does a storage made by ``clone`` read slower there?).

    PYTHONPATH=. python benchmarks/results/adopt61/filled_prepare_ab.py --rounds 5
"""

from __future__ import annotations

import argparse
import gc
import statistics
import time
from typing import Any

from derivgraph import planner
from derivgraph.compiler.stamp import stamping
from derivgraph.runtime.plan import Plan
from derivgraph.tools.bench_scaling import scaling_model, scaling_spec


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--size", type=int, default=100000)
    args = parser.parse_args()
    spec, seen = scaling_spec(), {}
    prepare, filled = Plan.prepare, planner.filled_column

    def timed(self: Plan, *a: Any, **k: Any) -> Any:
        start = time.process_time()
        try:
            return prepare(self, *a, **k)
        finally:
            seen["prepare"] = time.process_time() - start

    Plan.prepare = timed  # type: ignore[method-assign]
    with stamping(True):
        planner.compile_plan(scaling_model(250), [spec])  # warm-up
    arms = {"filled": filled, "off": lambda *a: None}
    out: dict[str, dict[str, list[float]]] = {a: {"total": [], "prepare": []} for a in arms}
    for r in range(args.rounds):
        for name in (list(arms) if r % 2 == 0 else list(reversed(arms))):
            planner.filled_column = arms[name]  # type: ignore[assignment]
            model = scaling_model(args.size // 4)
            gc.collect()
            start = time.process_time()
            with stamping(True):
                plan = planner.compile_plan(model, [spec])
            out[name]["total"].append(time.process_time() - start)
            out[name]["prepare"].append(seen["prepare"])
            del plan, model
    planner.filled_column, Plan.prepare = filled, prepare  # type: ignore[method-assign]
    for name, got in out.items():
        for key, xs in got.items():
            print(f"{name:7s} {key:8s} median {statistics.median(xs):.4f}  "
                  f"{[round(x, 4) for x in xs]}")
    for key in ("total", "prepare"):
        wins = sum(f < o for f, o in zip(out["filled"][key], out["off"][key]))
        print(f"{key}: filled lower in {wins} of {args.rounds}")


if __name__ == "__main__":
    main()
