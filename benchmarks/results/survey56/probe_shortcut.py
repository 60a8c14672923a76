"""Count, in situ on the tiny vLLM Llama's reloads, how often ``DictVersions.changed`` is
answered by the moved-again shortcut (``_moved_again`` True) and how often by the full compare,
and time each ``changed()`` call of the guard's watch (``perf_counter_ns``, min / median / q25 of
the calls that found dicts moved; ``PROBE_NO_COUNT=1``: the shortcut not wrapped, so not counted
and not slowed). Runs on any tree (a tree without the shortcut counts none).

    PYTHONPATH=$TREE python3 benchmarks/results/survey56/probe_shortcut.py --clock cpu --repeat 21
"""

from __future__ import annotations

import collections
import logging
import os
import runpy
import statistics
import sys
import time
from pathlib import Path

from derivgraph import dict_versions

counts: collections.Counter[str] = collections.Counter()
real_changed = dict_versions.DictVersions.changed
real_again = getattr(dict_versions.DictVersions, "_moved_again", None)
static = isinstance(vars(dict_versions.DictVersions).get("_moved_again"), staticmethod)


timed: list[int] = []


def changed(self: dict_versions.DictVersions) -> list[int]:
    start = time.perf_counter_ns()
    out = real_changed(self)
    took = time.perf_counter_ns() - start
    if out:
        timed.append(took)
    counts[f"changed n={len(self)} moved={len(out)}"] += 1
    return out


def again(self: dict_versions.DictVersions, *args: object) -> bool:
    out = False if real_again is None else real_again(*args) if static else real_again(self, *args)
    counts[f"moved_again n={len(self)} {out}"] += 1
    return out


dict_versions.DictVersions.changed = changed  # type: ignore[method-assign]
if real_again is not None and not os.environ.get("PROBE_NO_COUNT"):  # the count costs ~1 us
    dict_versions.DictVersions._moved_again = again  # type: ignore[method-assign]
bench = Path(__file__).resolve().parents[2] / "bench_vllm_reload.py"
sys.argv = [str(bench), *sys.argv[1:]]
try:
    runpy.run_path(str(bench), run_name="__main__")
finally:
    logging.getLogger(__name__).warning("counts")
    for key, n in sorted(counts.items()):
        sys.stderr.write(f"{n:6d}  {key}\n")
    if timed:
        xs = sorted(timed)
        sys.stderr.write(f"changed() with dicts moved: {len(xs)} calls, min {xs[0] / 1e3:.2f} us, "
                         f"q25 {xs[len(xs) // 4] / 1e3:.2f} us, "
                         f"median {statistics.median(xs) / 1e3:.2f} us\n")
