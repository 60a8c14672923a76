"""In-process A/B of this branch's cuts: after each warm compile at argv[1] (default 100000)
of this tree, the first gc.collect(0) with base's lists made again and kept ("base": the bound
sources' paths and addresses as their own lists, the compact lowering's written list a copy
of its order, each held column's metas and devices ``[value] * n``) or not ("mine"). Rounds
alternate the order; each round its own fresh model and compile."""
import gc
import statistics
import sys
import time

from derivgraph.compiler.graph import HeldDerived, Same
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
    extra = 0
    if tag == "base":
        holders = plan.holders
        bound = holders._sources
        holders._sources = bound._replace(paths=list(bound.paths), ptrs=list(bound.ptrs))
        extra += 2 * len(bound.paths)
        steps = plan.programs.lowered
        if steps._written is steps._order:
            steps._written = list(steps._order)
            extra += len(steps._order)
        seen = set()
        for c in plan.entries.columns:
            nodes = c.nodes
            if type(nodes) is HeldDerived and id(nodes) not in seen:
                seen.add(id(nodes))
                for name in ("metas", "devices"):
                    value = getattr(nodes, name)
                    if type(value) is Same:
                        setattr(nodes, name, list(value))
                        extra += len(value)
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
