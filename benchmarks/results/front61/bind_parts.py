"""Where the bind phase's time goes on the stamped scaling model (25k layers, 100k derived
tensors): the module walk alone, ``match_specs``, the per-spec grouping and ``_free_names``
(``check_bindings``' name proof) alone, and ``check_bindings``; process time, medians of N,
gc off. An attribution, not an A/B; needs `_free_names(by_spec, members)` (front61 and later).

    PYTHONPATH=TREE python benchmarks/results/front61/bind_parts.py [N]
"""

from __future__ import annotations

import gc
import statistics
import sys
import time
from typing import Any

from derivgraph.compiler import bind
from derivgraph.tools.bench_scaling import scaling_model, scaling_spec


def main() -> None:
    rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 9
    model, spec = scaling_model(25000), scaling_spec()
    gc.disable()
    times: dict[str, list[float]] = {k: [] for k in (
        "named_modules", "match_specs", "by_spec grouping", "_free_names", "check_bindings")}

    def timed(name: str, start: float) -> None:
        times[name].append(time.process_time() - start)

    for _ in range(rounds):
        start = time.process_time()
        list(model.named_modules())
        timed("named_modules", start)
        start = time.process_time()
        bound = bind.match_specs(model, [spec])
        timed("match_specs", start)
        start = time.process_time()
        by_spec: dict[int, tuple[Any, list[Any]]] = {}
        for b in bound:
            by_spec.setdefault(id(b.spec), (b.spec, []))[1].append(b.module)
        timed("by_spec grouping", start)
        start = time.process_time()
        bind._free_names(by_spec, {})
        timed("_free_names", start)
        start = time.process_time()
        bind.check_bindings(bound)
        timed("check_bindings", start)
    for name, xs in times.items():
        print(f"{name:18s} {statistics.median(xs):.4f}")


if __name__ == "__main__":
    main()
