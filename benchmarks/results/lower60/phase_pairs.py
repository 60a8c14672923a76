"""Stamped-only per-phase CPU time at 100k, for alternating A/B processes (base tree, this tree).

    PYTHONPATH=TREE:TREE/benchmarks python3 benchmarks/results/lower60/phase_pairs.py --repeat 3

One process: one warm-up compile, then ``--repeat`` stamped compiles of fresh scaling models
(phases wrapped as ``bench_compile_phases.py`` wraps them); prints one JSON line of each
phase's median with the tree's path. ``--pairs N --base B --mine M`` runs N such processes
per tree, alternating (base first in even pairs, mine first in odd ones), one JSON line each.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys


def one(repeat: int, size: int) -> None:
    """The phases of ``repeat`` stamped compiles in this process (the tree on the path)."""
    from bench_compile_phases import _instrument, timed_compile

    import derivgraph
    from derivgraph.planner import compile_plan
    from derivgraph.tools.bench_scaling import scaling_model, scaling_spec

    times: dict[str, float] = {}
    _instrument(times)
    spec, layers = scaling_spec(), max(1, size // 4)
    compile_plan(scaling_model(250), [spec])  # warm-up
    rows = []
    for _ in range(repeat):
        model = scaling_model(layers)
        plan, total = timed_compile(model, spec, times, stamped=True)
        rows.append({"total": total, **times})
        del plan, model
    out = {k: round(statistics.median(r.get(k, 0.0) for r in rows), 4) for k in rows[0]}
    out["tree"] = os.path.dirname(os.path.dirname(derivgraph.__file__))
    print(json.dumps(out))  # noqa: T201


def pairs(n: int, base: str, mine: str, repeat: int, size: int) -> None:
    """``n`` pairs of processes, alternating the order."""
    for i in range(n):
        for tree in ((base, mine) if i % 2 == 0 else (mine, base)):
            env = dict(os.environ, PYTHONPATH=f"{tree}:{tree}/benchmarks")
            got = subprocess.run([sys.executable, __file__, "--repeat", str(repeat), "--size",
                                  str(size)], env=env, capture_output=True, text=True,
                                 check=True)
            line = got.stdout.strip().splitlines()[-1]
            print(line, flush=True)  # noqa: T201


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--size", type=int, default=100000)
    parser.add_argument("--pairs", type=int, default=0)
    parser.add_argument("--base")
    parser.add_argument("--mine")
    args = parser.parse_args()
    if args.pairs:
        pairs(args.pairs, args.base, args.mine, args.repeat, args.size)
    else:
        one(args.repeat, args.size)


if __name__ == "__main__":
    main()
