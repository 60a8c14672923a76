"""Process time of ``lower._step_order`` (the other per-row set filter of the order in the
lowering: every step node, the rows' included) in a stamped 100k compile (25000 layers)."""
from __future__ import annotations

import time
from typing import Any

import derivgraph.compiler.lower as lower
from derivgraph import compile_plan
from derivgraph.compiler.stamp import stamping
from derivgraph.tools.bench_scaling import scaling_model, scaling_spec

real = lower._step_order
seen: list[float] = []


def timed(*args: Any) -> Any:
    start = time.process_time()
    try:
        return real(*args)
    finally:
        seen.append(time.process_time() - start)


lower._step_order = timed
with stamping(True):
    plan = compile_plan(scaling_model(25000), [scaling_spec()])
    for _ in range(4):
        lower.lower_steps(plan.tensors)
print("_step_order seconds per call:", " ".join(f"{s:.4f}" for s in seen))
