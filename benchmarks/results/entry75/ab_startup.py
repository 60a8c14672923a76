"""In-process A/B of ``BoundTensors.startup_addresses`` (entry75), interleaved A, B / B, A.

A plan of LAYERS stamped layers is compiled once. A: the check made reading every entry
(``tensors.table`` None: the base's reading); B: the columns' storages and addresses taken
at their rows (this tree). gc off, as in the compile; 2 warm-up rounds; prints medians and
how many rounds B beat A, with the load average before and after.
usage: PYTHONPATH=. python3 benchmarks/results/entry75/ab_startup.py [LAYERS] [ROUNDS]
"""

from __future__ import annotations

import gc
import os
import statistics
import sys
import time

from derivgraph import planner
from derivgraph.compiler.stamp import stamping
from derivgraph.tools.bench_scaling import scaling_model, scaling_spec


def main() -> None:
    layers = int(sys.argv[1]) if len(sys.argv) > 1 else 25000
    rounds = int(sys.argv[2]) if len(sys.argv) > 2 else 31
    with stamping(True):
        plan = planner.compile_plan(scaling_model(layers), [scaling_spec()])
    tensors, table = plan.tensors, plan.entries

    def run(with_table: bool) -> float:
        tensors.table = table if with_table else None
        tensors._startup = None
        t = time.perf_counter()
        tensors.startup_addresses()
        return time.perf_counter() - t

    b0, mask_b = tensors.startup_addresses(), tensors._startup_mask
    tensors._startup = None
    tensors.table = None
    a0, mask_a = tensors.startup_addresses(), tensors._startup_mask
    assert mask_a == mask_b and len(a0) == len(b0)
    assert a0.ptrs == b0.ptrs and all(x is y for x, y in zip(a0.tensors, b0.tensors))
    print(f"layers {layers} rounds {rounds} startup tensors {len(a0)} load {os.getloadavg()}")
    gc.disable()
    ta, tb = [], []
    for i in range(rounds + 2):
        if i % 2:
            b, a = run(True), run(False)
        else:
            a, b = run(False), run(True)
        if i >= 2:
            ta.append(a)
            tb.append(b)
    gc.enable()
    wins = sum(b < a for a, b in zip(ta, tb))
    print(f"startup_addresses A(read every entry) {statistics.median(ta) * 1e3:.2f} ms  "
          f"B(columns) {statistics.median(tb) * 1e3:.2f} ms  B faster {wins} of {len(ta)}")
    print(f"load after {os.getloadavg()}")


if __name__ == "__main__":
    main()
