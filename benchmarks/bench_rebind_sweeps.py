"""The sweeps that find rebuilt holders and owners: the sequence before against one sweep.

In one process, on the same plan, alternating, each timing right after a reload (cold caches,
as a real reload leaves them), thread CPU clock; medians and minima in microseconds:

* ``run_rebind`` (``reference``: every reload rebuilds the drafter's fused K/V holder):
  ``before`` = the holder identity sweep that stops at the first change, then a read of every
  holder, then a stale sweep over that read (the rebind's sequence before); ``after`` = one
  :func:`~derivgraph.runtime.accessors.changes` sweep, then the stale holders read.
* ``run_intact`` (``deepseek``: a reload rebuilds no holder, the common case of a run):
  ``before`` = the holder identity sweep (``all``); ``after`` = one ``changes`` sweep (the
  same ``all``, then nothing).
* ``hop_refresh`` (``reference`` after the engine's post-load, which rebuilds 427 owner
  objects): ``before`` = the hop sweep that stops at the first change, then a full stale sweep;
  ``after`` = one ``changes`` sweep.
* ``refill_rebind`` (``deepseek``, after the engine's post-load, the refill's steps up to
  its rebind: restore, source check, read, check, copy): ``before`` = the hop re-check and
  the stale sweep the rebind made; ``after`` = none (the run's own owner check and the
  read's proof are reused), so only ``before`` is timed.

Both sides find the same indices (checked every round). Then the state is put back, untimed.

    python3 benchmarks/bench_rebind_sweeps.py --repeat 21
"""

from __future__ import annotations

import argparse
import gc
import json
import operator
import statistics
import time
from collections.abc import Callable
from itertools import compress
from pathlib import Path
from typing import Any

import torch

from derivgraph.planner import compile_plan
from derivgraph.runtime.accessors import changes
from derivgraph.tools.bench import _workload

_is, _not = operator.is_, operator.not_


def _before_holders(table: Any) -> list[int]:
    if table.intact():
        return []
    return table.stale(table.current())


def _after_holders(table: Any) -> list[int]:
    stale = table.changed()
    table.values(stale)
    return stale


def _before_hops(hops: Any) -> list[int]:
    dicts, keys, expected = hops.dicts, hops.keys, hops.expected
    if all(map(_is, map(dict.get, dicts, keys), expected)):
        return []
    return list(compress(range(len(dicts)), map(_not, map(
        _is, map(dict.get, dicts, keys), expected))))


def _after_hops(hops: Any) -> list[int]:
    return changes(map(_is, map(dict.get, hops.dicts, hops.keys), hops.expected),
                   len(hops.dicts))


def _pair(times: dict[str, list[float]], name: str, prepare: Callable[[int], Any],
          sides: dict[str, Callable[[Any], list[int]]], restore: Callable[[], Any],
          i: int) -> None:
    found = []
    order = list(sides.items()) if i % 2 == 0 else list(sides.items())[::-1]
    for side, fn in order:
        arg = prepare(i)
        t0 = time.thread_time_ns()
        found.append(fn(arg))
        times[f"{name}_{side}"].append(time.thread_time_ns() - t0)
        restore()
    if len(found) == 2 and found[0] != found[1]:
        raise SystemExit(f"{name}: the two sides found different indices")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--repeat", type=int, default=21)
    parser.add_argument("--json", default=None, help="also write the result here")
    args = parser.parse_args()
    ref, _specs, ref_reload, ref_post_load, _ = _workload("cpu", "reference", 61, None)
    ref_plan = compile_plan(ref, _specs)
    ds, ds_specs, ds_reload, ds_post_load, _ = _workload("cpu", "deepseek", 61, None)
    ds_plan = compile_plan(ds, ds_specs)
    ref_plan.run()
    ref_post_load()
    ref_plan.refill()
    ds_post_load()
    ds_plan.refill()
    times: dict[str, list[float]] = {k: [] for k in (
        "run_rebind_before", "run_rebind_after", "run_intact_before", "run_intact_after",
        "hop_refresh_before", "hop_refresh_after",
        "refill_rebind_before")}
    counts: dict[str, int] = {}

    def reloaded(i: int) -> Any:
        ref_reload(i)
        return ref_plan.holders.table

    def ds_reloaded(i: int) -> Any:
        ds_reload(i)
        return ds_plan.holders.table

    def post_loaded(i: int) -> Any:
        ref_reload(i)
        ref_post_load()
        return ref_plan.holders.hops

    def refill_read(i: int) -> Any:
        ds_reload(i)
        ds_post_load()
        ds_plan.tensors.restore_storage()
        holders = ds_plan.holders
        holders.sources_intact()
        current = holders.table.current()
        ds_plan._refill_table.take(current).copy()  # the refill up to its rebind
        return holders, current

    def before_refill(state: Any) -> list[int]:
        holders, current = state
        holders.hops.intact()
        return holders.table.stale(current)

    gc.collect()
    gc.freeze()
    with torch.no_grad():
        for i in range(args.repeat):
            _pair(times, "run_rebind", reloaded,
                  {"before": _before_holders, "after": _after_holders}, ref_plan.rebind, i)
            _pair(times, "run_intact", ds_reloaded,
                  {"before": lambda t: [] if t.intact() else [-1], "after": _after_holders},
                  ds_plan.rebind, i)
            _pair(times, "hop_refresh", post_loaded,
                  {"before": _before_hops, "after": _after_hops}, ref_plan.refill, i)
            _pair(times, "refill_rebind", refill_read, {"before": before_refill},
                  ds_plan.refill, i)
    gc.unfreeze()
    counts["run_rebind_stale"] = len(_after_holders(reloaded(0)))
    ref_plan.rebind()
    counts["hop_refresh_stale"] = len(_after_hops(post_loaded(0)))
    counts["holders_reference"] = len(ref_plan.holders.table)
    counts["hops_reference"] = len(ref_plan.holders.hops.dicts)
    counts["holders_deepseek"] = len(ds_plan.holders.table)
    result = {"repeat": args.repeat, "clock": "thread_time_ns", "torch": torch.__version__,
              "counts": counts,
              "median_us": {k: round(statistics.median(v) / 1e3, 1) for k, v in times.items()},
              "min_us": {k: round(min(v) / 1e3, 1) for k, v in times.items()}}
    if args.json:
        Path(args.json).write_text(json.dumps(result, indent=1) + "\n")
    print(json.dumps(result))  # noqa: T201 - a benchmark script reports on stdout


if __name__ == "__main__":
    main()
