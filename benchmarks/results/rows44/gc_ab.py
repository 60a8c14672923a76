"""Experiment (no library change): the cyclic collector's share of a stamped 100k compile.

One process, this tree. Alternating compiles of the scaling workload (fresh model each,
``gc.collect()`` before each), three ways: ``as_is``; ``build_paused``: the automatic collector
paused for ``build_graph`` and its survivors moved to the oldest generation without a walk (the
pattern of ``derivgraph.audit.static.scan.young_collections_only`` + ``promote_survivors``,
copied here); ``compile_paused``: the same around the whole ``compile_plan``. Per compile:
process time of ``compile_plan``, of ``build_graph``, and the collector's own time (``gc.callbacks``).

    python gc_ab.py [--size 100000] [--rounds 5] > gc_ab.txt
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import statistics
import time
from collections.abc import Iterator
from typing import Any

import derivgraph.planner as planner
from derivgraph.planner import compile_plan
from derivgraph.tools.bench_scaling import scaling_model, scaling_spec


@contextlib.contextmanager
def paused() -> Iterator[None]:
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if gc.get_freeze_count() == 0:  # survivors to the oldest generation, no walk
            gc.freeze()
            gc.unfreeze()
        if was:
            gc.enable()


_BUILD = planner.build_graph
_STATE = {"pause_build": False, "build": 0.0, "gc": 0.0, "t": 0.0}


def _build(*args: Any, **kwargs: Any) -> Any:
    start = time.process_time()
    try:
        with paused() if _STATE["pause_build"] else contextlib.nullcontext():
            return _BUILD(*args, **kwargs)
    finally:
        _STATE["build"] += time.process_time() - start


def _gc_time(phase: str, info: dict[str, Any]) -> None:
    if phase == "start":
        _STATE["t"] = time.perf_counter()
    else:
        _STATE["gc"] += time.perf_counter() - _STATE["t"]


def once(way: str, size: int) -> dict[str, float]:
    model = scaling_model(size // 4)
    gc.collect()
    _STATE.update(pause_build=way == "build_paused", build=0.0, gc=0.0)
    start = time.process_time()
    with paused() if way == "compile_paused" else contextlib.nullcontext():
        plan = compile_plan(model, [scaling_spec()])
    total = time.process_time() - start
    assert plan.graph.stamped == size // 4 - 1
    del plan
    return {"compile": total, "build_graph": _STATE["build"], "collector": _STATE["gc"]}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--size", type=int, default=100000)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    planner.build_graph = _build
    gc.callbacks.append(_gc_time)
    once("as_is", 4000)
    ways = ["as_is", "build_paused", "compile_paused"]
    got: dict[str, list[dict[str, float]]] = {w: [] for w in ways}
    for i in range(args.rounds):
        for way in ways[i % 3:] + ways[:i % 3]:
            got[way].append(once(way, args.size))
            print(way, i, {k: round(v, 3) for k, v in got[way][-1].items()}, flush=True)
    print(f"\nmedians over {args.rounds} rounds (s; compile, build_graph: process time; "
          f"collector: wall time in gc callbacks), size {args.size}")
    for way in ways:
        print(way, {k: round(statistics.median(r[k] for r in got[way]), 3)
                    for k in got[way][0]})


if __name__ == "__main__":
    main()
