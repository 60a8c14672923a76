"""The piece itself, in process, at ``SIZE`` derived tensors (default 100000): a warm compile
with ``Plan.hold_rows`` off, then (``held``) the time of ``plan.hold_rows()`` (the release:
its checks, the mapping made, 100k entries freed) and of the first young collection after
it, against (``kept``) that collection with the rows kept; interleaved rounds.
usage: PYTHONPATH=. python3 benchmarks/results/rowentry79/ab_release_piece.py [SIZE] [ROUNDS]
"""

from __future__ import annotations

import gc
import statistics
import sys
import time

from derivgraph.planner import compile_plan
from derivgraph.runtime.plan import Plan
from derivgraph.tools.bench_scaling import scaling_model, scaling_spec

HOLD = Plan.hold_rows


def once(hold: bool, size: int) -> tuple[float, float, int]:
    model = scaling_model(size // 4)
    Plan.hold_rows = lambda self: False  # type: ignore[method-assign]
    gc.collect()
    gc.disable()
    try:
        plan = compile_plan(model, [scaling_spec()])
        Plan.hold_rows = HOLD  # type: ignore[method-assign]
        t = time.perf_counter()
        if hold:
            assert plan.hold_rows()
        t = time.perf_counter() - t
        young = len(gc.get_objects(0))
        g = time.perf_counter()
        gc.collect(0)
        g = time.perf_counter() - g
    finally:
        gc.enable()
        Plan.hold_rows = HOLD  # type: ignore[method-assign]
    return t, g, young


def main() -> None:
    size = int(sys.argv[1]) if len(sys.argv) > 1 else 100000
    rounds = int(sys.argv[2]) if len(sys.argv) > 2 else 5
    once(True, size)
    out: dict[str, list[tuple[float, float, int]]] = {"held": [], "kept": []}
    for r in range(rounds):
        for name in (("held", "kept") if r % 2 == 0 else ("kept", "held")):
            out[name].append(once(name == "held", size))
            t, g, y = out[name][-1]
            print(f"round {r} {name}: hold_rows {t * 1e3:.1f} ms, gc(0) {g * 1e3:.1f} ms, "
                  f"sum {(t + g) * 1e3:.1f} ms, young {y}", flush=True)
    for name, rows in out.items():
        print(f"{name}: median hold_rows {statistics.median(r[0] for r in rows) * 1e3:.1f} ms, "
              f"gc(0) {statistics.median(r[1] for r in rows) * 1e3:.1f} ms, sum "
              f"{statistics.median(r[0] + r[1] for r in rows) * 1e3:.1f} ms")
    d = [(h[0] + h[1]) - (k[0] + k[1]) for h, k in zip(out["held"], out["kept"])]
    print(f"held - kept per round (ms): {', '.join(f'{x * 1e3:+.1f}' for x in d)}; "
          f"lower in {sum(x < 0 for x in d)} of {len(d)}")


if __name__ == "__main__":
    main()
