"""Warm against cold: pieces of the plugin's completion timed in a loop on the bench's tiny
Llama, warm (back to back), after a data thrash (a 64 MB ``add_``), after a code thrash (json
over a large object) and after both (median us of 300 calls each).

    python3 benchmarks/results/plugin36/cold_vs_warm.py

Right after ``reload_weights`` the plugin's code and data are as cold as after such a thrash:
this shows how much of its in-situ cost is cache misses, not work.
"""

from __future__ import annotations

import json
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _tiny_llama import tiny_llama  # noqa: E402

BIG = torch.zeros(16 * 1024 * 1024)
BLOB = {f"k{i}": [i, str(i), {"x": i}] for i in range(20000)}


def data_thrash() -> None:
    BIG.add_(1)


def code_thrash() -> None:
    json.loads(json.dumps(BLOB))


def both() -> None:
    data_thrash()
    code_thrash()


def timed(fn: Callable[[], object], before: Callable[[], None] | None = None,
          n: int = 300) -> float:
    out = []
    for _ in range(n):
        if before is not None:
            before()
        start = time.perf_counter_ns()
        fn()
        out.append(time.perf_counter_ns() - start)
    return round(statistics.median(out) / 1e3, 1)


def main() -> None:
    with tiny_llama() as (model, _reload):
        from vllm_integration import session
        plan = session.plan_for(model)
        state = session.state_for(model)
        pieces = {"guard.restore": lambda: state.guard.restore(model, declared=()),
                  "plan.refill(verify=True)": lambda: plan.refill(verify=True),
                  "holders.sources_intact": lambda: plan.holders.sources_intact()}
        for name, fn in pieces.items():
            print(name, {"warm": timed(fn), "data thrash": timed(fn, data_thrash),  # noqa: T201
                         "code thrash": timed(fn, code_thrash), "both": timed(fn, both)})


if __name__ == "__main__":
    main()
