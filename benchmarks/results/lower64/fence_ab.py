"""In-process A/B of ``schedule_layers.layer_fence`` (the compact schedule's storage fence) on
the bound tensors and lowered steps of one compiled 100k stamped scaling plan, the compile's
layout book set again once (the layer proof's addresses kept, as in ``install``): the base
tree's ``schedule_layers.py`` against this tree's. The fences are asserted equal first
(copies, templates, tables, shared nodes, fenced addresses). Arms alternate, the order
reversed every other round; collector off.

    PYTHONPATH=. python3 benchmarks/results/lower64/fence_ab.py \
        --base /tmp/base_lower64 --rounds 15
"""

from __future__ import annotations

import gc
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # module_ab

from module_ab import ab_args, alternate, base_module, report  # noqa: E402

from derivgraph import planner  # noqa: E402
from derivgraph.compiler import lower, schedule_layers  # noqa: E402
from derivgraph.compiler.stamp import stamping  # noqa: E402
from derivgraph.tools.bench_scaling import scaling_model, scaling_spec  # noqa: E402


def main() -> None:
    args = ab_args(__doc__, 15)
    base = base_module(args.base, "derivgraph/compiler/schedule_layers.py")
    seen: dict[str, Any] = {}
    real = planner._lower

    def spy(plan: Any, *a: Any, **k: Any) -> None:
        seen["ctx"], seen["book"] = plan.tensors, plan.tensors.layouts
        real(plan, *a, **k)

    planner._lower = spy
    with stamping(True):
        plan = planner.compile_plan(scaling_model(args.size // 4), [scaling_spec()])
    planner._lower = real
    ctx, book = seen["ctx"], seen["book"]
    ctx.layouts = book  # the compile's book; the layer proof reads the addresses again
    steps = lower.lower_steps(ctx)

    def run(module: Any) -> Any:
        return module.layer_fence(ctx, steps, steps.layers)

    want, got = run(base), run(schedule_layers)
    assert want is not None and got is not None
    assert (want.copy_of, want.templates, want.tables, want.shared, want.fenced) == \
        (got.copy_of, got.templates, got.tables, got.shared, got.fenced)
    del want, got
    gc.collect()
    gc.disable()
    try:
        print("layer_fence (the compile's book, the proof's addresses kept):")  # noqa: T201
        report(alternate(args.rounds, {"base": lambda: run(base),
                                       "mine": lambda: run(schedule_layers)}))
    finally:
        gc.enable()
        ctx.layouts = None
    del plan


if __name__ == "__main__":
    main()
