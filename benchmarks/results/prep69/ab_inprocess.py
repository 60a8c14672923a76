"""In-process A/B of one of this branch's changes on the 100k scaling compile (warm).

usage: PYTHONPATH=<tree> python ab_inprocess.py CHANGE [PAIRS]
Besides the whole compile, the time inside the function the change is in (``PHASES[CHANGE]``,
wrapped with a timer where its module's callers look it up) is reported the same way.
CHANGE ``addresses``: A reads every entry column's storage addresses again (the base's
sweep: ``ColumnLayouts.addresses`` answers None), B takes them from the startup record.
CHANGE ``by_name``: A groups positions by name with the base's loop, B with this tree's
``by_name`` (its periodic fast path). Pairs alternate A, B (the order flipped every pair), gc
off as in ``compile_plan``; prints each pair, the medians, and how many pairs B beat A.
"""

from __future__ import annotations

import gc
import os
import statistics
import sys
import time

from derivgraph import planner
from derivgraph.column_layout import ColumnLayouts
from derivgraph.compiler import lower_layers
from derivgraph.runtime import accessors
from derivgraph.tools.bench_scaling import scaling_model, scaling_spec


def _base_by_name(names):
    groups: dict[str, list[int]] = {}
    for i, name in enumerate(names):
        groups.setdefault(name, []).append(i)
    return groups


PHASES = {"addresses": "column_addresses", "by_name": "_record_startup"}
_IN: list[float] = []


def _timed(name: str) -> None:
    owner = lower_layers if name == "column_addresses" else planner
    real = getattr(owner, name)

    def wrapper(*args, **kwargs):
        start = time.perf_counter()
        try:
            return real(*args, **kwargs)
        finally:
            _IN.append(time.perf_counter() - start)

    setattr(owner, name, wrapper)


def _arms(change: str):
    if change == "addresses":
        real = ColumnLayouts.addresses

        def on() -> None:
            ColumnLayouts.addresses = real

        def off() -> None:
            ColumnLayouts.addresses = lambda self, tensors: None
    elif change == "by_name":
        real = accessors.by_name

        def on() -> None:
            accessors.by_name = real

        def off() -> None:
            accessors.by_name = _base_by_name
    else:
        raise SystemExit(f"unknown change {change!r}")
    return off, on


def main() -> None:
    change = sys.argv[1]
    pairs = int(sys.argv[2]) if len(sys.argv) > 2 else 8
    off, on = _arms(change)
    _timed(PHASES[change])
    spec, layers = scaling_spec(), 25000
    planner.compile_plan(scaling_model(layers), [spec])  # warm-up
    a, b, pa, pb = [], [], [], []

    def once(arm) -> tuple[float, float]:
        arm()
        model = scaling_model(layers)
        gc.collect()
        _IN.clear()
        start = time.perf_counter()
        plan = planner.compile_plan(model, [spec])
        took = time.perf_counter() - start
        del plan, model
        return took, sum(_IN)

    for i in range(pairs):
        if i % 2 == 0:
            (ta, xa), (tb, xb) = once(off), once(on)
        else:
            (tb, xb), (ta, xa) = once(on), once(off)
        a.append(ta)
        b.append(tb)
        pa.append(xa)
        pb.append(xb)
        print(f"pair {i}: A {ta:.4f} B {tb:.4f}  {PHASES[change]}: A {xa:.4f} B {xb:.4f}",
              flush=True)
    on()
    for what, left, right in (("compile", a, b), (PHASES[change], pa, pb)):
        wins = sum(x > y for x, y in zip(left, right))
        print(f"{change} {what}: A median {statistics.median(left):.4f} s, B median "
              f"{statistics.median(right):.4f} s, median of pair diffs (A-B) "
              f"{statistics.median(x - y for x, y in zip(left, right)):+.4f} s; "
              f"B faster in {wins} of {pairs}; load {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
