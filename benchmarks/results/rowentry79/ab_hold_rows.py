"""In-process A/B of :meth:`Plan.hold_rows` at ``SIZE`` derived tensors (default 100000):
warm compiles of the scaling model, interleaved, with the rows held by column (``held``,
the library) and kept as entry objects (``kept``: ``Plan.hold_rows`` answering False, the
path before); per round the compile, the young objects it leaves and the first young
collection after it (the collector's debt), and the sum.
usage: PYTHONPATH=. python3 benchmarks/results/rowentry79/ab_hold_rows.py [SIZE] [ROUNDS]
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


def once(hold: bool, size: int) -> tuple[float, int, float]:
    spec = scaling_spec()
    model = scaling_model(size // 4)
    Plan.hold_rows = HOLD if hold else (lambda self: False)  # type: ignore[method-assign]
    gc.collect()
    gc.disable()
    try:
        t = time.perf_counter()
        plan = compile_plan(model, [spec])
        t = time.perf_counter() - t
        young = len(gc.get_objects(0))
        g = time.perf_counter()
        gc.collect(0)
        g = time.perf_counter() - g
    finally:
        gc.enable()
        Plan.hold_rows = HOLD  # type: ignore[method-assign]
    del plan
    return t, young, g


def main() -> None:
    size = int(sys.argv[1]) if len(sys.argv) > 1 else 100000
    rounds = int(sys.argv[2]) if len(sys.argv) > 2 else 5
    once(True, size)  # warm
    out: dict[str, list[tuple[float, int, float]]] = {"held": [], "kept": []}
    for r in range(rounds):
        for name in (("held", "kept") if r % 2 == 0 else ("kept", "held")):
            out[name].append(once(name == "held", size))
            t, y, g = out[name][-1]
            print(f"round {r} {name}: compile {t:.3f} s, young {y}, gc(0) {g:.3f} s, "
                  f"sum {t + g:.3f} s", flush=True)
    for name, rows in out.items():
        print(f"{name}: median compile {statistics.median(r[0] for r in rows):.3f} s, "
              f"young {statistics.median(r[1] for r in rows):.0f}, gc(0) "
              f"{statistics.median(r[2] for r in rows):.3f} s, compile+gc "
              f"{statistics.median(r[0] + r[2] for r in rows):.3f} s")
    pairs = [(h[0] + h[2]) - (k[0] + k[2]) for h, k in zip(out["held"], out["kept"])]
    print(f"held - kept (compile+gc) per round: {', '.join(f'{d:+.3f}' for d in pairs)}; "
          f"lower in {sum(d < 0 for d in pairs)} of {len(pairs)}")


if __name__ == "__main__":
    main()
