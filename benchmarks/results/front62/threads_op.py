"""The evaluation's column ops at 100k derived tensors' scale (one [25000, 8] float32 operand
column), by torch's intra-op thread count: ``OPS['div']`` (``1.0 / x``) and ``OPS['mul']``,
``torch.stack`` of 25k rows and ``unbind``; wall seconds, 3 tries each.

    PYTHONPATH=. python benchmarks/results/front62/threads_op.py THREADS
"""

from __future__ import annotations

import gc
import sys
import time

import torch

from derivgraph.ops import OPS


def main() -> None:
    torch.set_num_threads(int(sys.argv[1]))
    x, w = torch.rand(25000, 8), torch.rand(25000, 8)
    rows = list(x.unbind(0))
    gc.disable()
    print(f"threads {torch.get_num_threads()}")
    for _ in range(3):
        t0 = time.perf_counter()
        OPS["div"].fn(1.0, x)
        t1 = time.perf_counter()
        OPS["mul"].fn(x, w)
        t2 = time.perf_counter()
        torch.stack(rows)
        t3 = time.perf_counter()
        x.unbind(0)
        t4 = time.perf_counter()
        print(f"div {t1 - t0:.4f}  mul {t2 - t1:.4f}  stack {t3 - t2:.4f}  unbind {t4 - t3:.4f}")


if __name__ == "__main__":
    main()
