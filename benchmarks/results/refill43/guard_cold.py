"""Whether the layout guard's cold cost is the fresh tensors' memory or its own: after each
reload and post-load, alternately, a sweep that touches every fresh ``TensorImpl`` (``dim``)
then the guard, or the guard then the sweep. Thread CPU clock, medians and minima in us.

    PYTHONPATH=. python3 benchmarks/results/refill43/guard_cold.py
"""

from __future__ import annotations

import gc
import statistics
import time
from collections.abc import Callable
from typing import Any

import torch

from derivgraph.planner import compile_plan
from derivgraph.tools.bench import _workload

_dim = torch.Tensor.dim


def _touch(picked: list[Any]) -> list[int]:
    return list(map(_dim, picked))


def main() -> None:
    model, specs, reload, post_load, _ = _workload("cpu", "deepseek", 61, None)
    plan = compile_plan(model, specs)
    reload(0)
    post_load()
    plan.refill()
    table = plan._refill_table
    times: dict[str, list[float]] = {}

    def timed(name: str, fn: Callable[..., Any], *args: Any) -> None:
        t0 = time.thread_time_ns()
        fn(*args)
        times.setdefault(name, []).append((time.thread_time_ns() - t0) / 1e3)

    gc.collect()
    gc.freeze()
    with torch.no_grad():
        for i in range(41):
            reload(i)
            post_load()
            picked = table.read()
            if i % 2:
                timed("touch_impls", _touch, picked)
                timed("guard_after_touch", table._layouts.match, picked)
            else:
                timed("guard_first", table._layouts.match, picked)
                timed("touch_after_guard", _touch, picked)
            picked = []
            plan.refill()
    gc.unfreeze()
    for name, values in times.items():
        print(name, round(statistics.median(values), 1), round(min(values), 1))  # noqa: T201


if __name__ == "__main__":
    main()
