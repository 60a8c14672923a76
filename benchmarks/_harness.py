"""The timing loop the eager-pass benchmarks share (``bench_pass_phases``, ``bench_flat_pass``).

Each round reloads the weights (which sweeps the caches, as a real reload does) and times the
engine's post-load step (``naive``), then re-binds the holders it rebuilt, untimed, as
``derivgraph bench``'s refill does; the script then times its own figures after reloads of its
own. Thread CPU clock (a loaded machine's waits for a core are not counted), ``torch.no_grad``,
and the objects made before the first round frozen (``gc.freeze()``, as vLLM does after
start-up). Figures in microseconds: medians and minima.
"""

from __future__ import annotations

import gc
import statistics
import time
from collections.abc import Callable, Iterator
from typing import Any

__all__ = ["Timings"]


class Timings:
    """Named lists of thread-clock timings, and the rounds that fill them."""

    def __init__(self, *keys: str) -> None:
        self.ns: dict[str, list[int]] = {k: [] for k in ("naive", *keys)}

    def timed(self, key: str, fn: Callable[[], Any]) -> Any:
        """``fn()`` timed on the thread's CPU clock under ``key``; returns what it returned."""
        t0 = time.thread_time_ns()
        out = fn()
        self.ns[key].append(time.thread_time_ns() - t0)
        return out

    def rounds(self, repeat: int, reload: Callable[[int], Any], post_load: Callable[[], Any],
               plan: Any) -> Iterator[int]:
        """``repeat`` rounds, each after a reload and the timed post-load (``naive``) with the
        plan's holders re-bound; yields the round's index (gc frozen, no grad, meanwhile)."""
        import torch

        gc.collect()
        gc.freeze()
        try:
            with torch.no_grad():
                for i in range(repeat):
                    reload(i)
                    self.timed("naive", post_load)
                    plan.rebind()  # untimed: the holders the post-load rebuilt
                    yield i
        finally:
            gc.unfreeze()

    def medians_us(self) -> dict[str, float]:
        return {k: round(statistics.median(v) / 1e3, 1) for k, v in self.ns.items() if v}

    def minima_us(self) -> dict[str, float]:
        return {k: round(min(v) / 1e3, 1) for k, v in self.ns.items() if v}
