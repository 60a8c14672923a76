"""This tree with hold47's three rules on vs off (off: ``held_columns`` answers no column,
``PathReader.untouched_by`` says False, ``entry_columns`` gets no adoption records: each the
base's path), alternating compiles in one process, phases timed as bench_compile_phases.py
times them. Separates what the rules change in later phases (RefillTable, sources_intact)
from process-to-process noise. Run from the worktree root:

    PYTHONPATH=. python3 benchmarks/results/hold47/onoff.py --rounds 3 [--plain]
"""

import argparse
import statistics
import sys

sys.path.insert(0, "benchmarks")
from bench_compile_phases import _instrument, timed_compile  # noqa: E402

from derivgraph import planner  # noqa: E402
from derivgraph.compiler.owners import PathReader  # noqa: E402
from derivgraph.tools.bench_scaling import scaling_model, scaling_spec  # noqa: E402

parser = argparse.ArgumentParser()
parser.add_argument("--size", type=int, default=100000)
parser.add_argument("--rounds", type=int, default=3)
parser.add_argument("--plain", action="store_true")
args = parser.parse_args()
times: dict[str, float] = {}
_instrument(times)
real_held, real_untouched = planner.held_columns, PathReader.untouched_by
real_columns = planner.entry_columns  # instrumented


def switch(on: bool) -> None:
    planner.held_columns = real_held if on else (lambda columns, others, owners: [])
    PathReader.untouched_by = real_untouched if on else (lambda self, names: False)
    planner.entry_columns = real_columns if on else (
        lambda tables, planned, owners, proven=(): real_columns(tables, planned, owners))


spec = scaling_spec()
runs = {True: [], False: []}
for r in range(args.rounds):
    for on in ((True, False) if r % 2 == 0 else (False, True)):
        switch(on)
        _plan, total = timed_compile(scaling_model(args.size // 4), spec, times,
                                     stamped=not args.plain)
        del _plan
        runs[on].append({"total": total, **times})
        print(f"round {r} {'on ' if on else 'off'} total {total:.3f}", flush=True)
for key in runs[True][0]:
    on = [x.get(key, 0.0) for x in runs[True]]
    off = [x.get(key, 0.0) for x in runs[False]]
    d = [a - b for a, b in zip(on, off)]
    print(f"{key:34s} off {statistics.median(off):7.3f}  on {statistics.median(on):7.3f}  "
          f"delta {statistics.median(d):+.3f}  on faster {sum(x < 0 for x in d)}/{len(d)}")
