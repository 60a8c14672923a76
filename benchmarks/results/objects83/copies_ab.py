"""In-process A/B of this branch's cut: after each warm compile at argv[1] (default 100000)
of this tree, the first gc.collect(0) with the copies base kept made again ("base": each held
entry column's ids, paths and owners as its own list, as base's adoption kept them; the
table's first column keeps the reader's list as before) or not ("mine"). Rounds alternate
the order; each round its own fresh model and compile."""
import gc
import statistics
import sys
import time

from derivgraph.compiler.graph import HeldDerived
from derivgraph.planner import compile_plan
from derivgraph.tools.bench_scaling import scaling_model, scaling_spec

size = int(sys.argv[1]) if len(sys.argv) > 1 else 100000
rounds = int(sys.argv[2]) if len(sys.argv) > 2 else 6
spec = scaling_spec()
compile_plan(scaling_model(size // 4), [spec])


def one(tag: str) -> tuple[float, int]:
    model = scaling_model(size // 4)
    gc.collect()
    gc.disable()
    plan = compile_plan(model, [spec])
    held = [c for c in plan.entries.columns if type(c.nodes) is HeldDerived]
    extra = 0
    if tag == "base":  # base's copies: ids and paths per column, owners per later column
        for k, c in enumerate(held):
            c.ids, c.paths = list(c.ids), list(c.paths)
            extra += 2 * len(c.ids)
            if k:
                c.owners = list(c.owners)
                extra += len(c.owners)
    t = time.perf_counter()
    gc.collect(0)
    t = time.perf_counter() - t
    gc.enable()
    del plan
    return t, extra


out: dict[str, list[float]] = {"base": [], "mine": []}
for r in range(rounds):
    for tag in (("base", "mine") if r % 2 == 0 else ("mine", "base")):
        t, extra = one(tag)
        out[tag].append(t)
        print(f"round {r} {tag}: gc(0) {t * 1e3:.1f} ms (copied references {extra})", flush=True)
for tag, ts in out.items():
    print(f"{tag}: gc(0) median {statistics.median(ts) * 1e3:.1f} ms, min {min(ts) * 1e3:.1f} ms")
