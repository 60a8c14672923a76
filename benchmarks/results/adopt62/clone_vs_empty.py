"""What the fill of the 50k pass-written rows costs at allocation (the question of the task):
``torch.clone`` (adopt61's filled allocation: storage and fill in one call) against
``torch.empty_like`` (storage only) of 50k rows of the scaling model's shape ([8] fp32, rows
of one unbound column), alternating, process time.

    PYTHONPATH=. python3 benchmarks/results/adopt62/clone_vs_empty.py
"""

from __future__ import annotations

import gc
import statistics
import time

import torch


def main() -> None:
    gc.disable()
    rows = list(torch.rand(50000, 8).unbind(0))
    times: dict[str, list[float]] = {"clone": [], "empty_like": []}
    for r in range(15):
        arms = [("clone", torch.clone), ("empty_like", torch.empty_like)]
        for name, fn in arms if r % 2 == 0 else arms[::-1]:
            start = time.process_time()
            made = list(map(fn, rows))
            times[name].append(time.process_time() - start)
            del made
    for name, xs in times.items():
        print(f"{name:10s} median {statistics.median(xs):.4f} s  {[round(x, 4) for x in xs]}")
    wins = sum(e < c for c, e in zip(times["clone"], times["empty_like"]))
    print(f"empty_like faster in {wins} of 15")


if __name__ == "__main__":
    main()
