"""Shared part of the in-process A/B scripts of the collector's debt (``objects83``, ``refsA84``,
``refsB84`` ``copies_ab.py``): after each warm compile at argv[1] derived tensors (default
100000) of this tree, the first ``gc.collect(0)`` timed with base's lists made again by the
script's ``rebase(plan)`` ("base", which returns the references it made) or not ("mine").
Rounds (argv[2], default 6) alternate the order; each round its own fresh model and compile.

    from first_collect_ab import run
    run(rebase)
"""

from __future__ import annotations

import gc
import statistics
import sys
import time
from collections.abc import Callable
from typing import Any

from derivgraph.planner import compile_plan
from derivgraph.tools.bench_scaling import scaling_model, scaling_spec

__all__ = ["run"]


def run(rebase: Callable[[Any], int]) -> None:
    """Time the first young collection after each compile, base's lists made again or not."""
    size = int(sys.argv[1]) if len(sys.argv) > 1 else 100000
    rounds = int(sys.argv[2]) if len(sys.argv) > 2 else 6
    spec = scaling_spec()
    compile_plan(scaling_model(size // 4), [spec])

    def one(tag: str) -> tuple[float, int]:
        model = scaling_model(size // 4)
        gc.collect()
        gc.disable()
        plan = compile_plan(model, [spec])
        extra = rebase(plan) if tag == "base" else 0
        t = time.perf_counter()
        gc.collect(0)
        t = time.perf_counter() - t
        gc.enable()
        del plan
        return t, extra

    out: dict[str, list[float]] = {"base": [], "mine": []}
    for r in range(rounds):
        for tag in (("base", "mine") if r % 2 == 0 else ("mine", "base")):
            t, extra = one(tag)
            out[tag].append(t)
            print(f"round {r} {tag}: gc(0) {t * 1e3:.1f} ms (copied references {extra})",
                  flush=True)
    for tag, ts in out.items():
        print(f"{tag}: gc(0) median {statistics.median(ts) * 1e3:.1f} ms, "
              f"min {min(ts) * 1e3:.1f} ms")
