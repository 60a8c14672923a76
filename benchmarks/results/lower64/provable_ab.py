"""In-process A/B of ``lower_layers.provable_layers`` (the layer proof's column sweeps) on the
bound tensors of one compiled 100k stamped scaling plan, the compile's layout book set again
before each call (which also drops the kept addresses): the base tree's ``lower_layers.py``
against this tree's; the proven tables are asserted equal first. Arms alternate, the order
reversed every other round; collector off.

    PYTHONPATH=. python3 benchmarks/results/lower64/provable_ab.py \
        --base /tmp/base_lower64 --rounds 11
"""

from __future__ import annotations

import gc
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # module_ab

from module_ab import ab_args, alternate, base_module, report  # noqa: E402

from derivgraph import planner  # noqa: E402
from derivgraph.compiler import lower_layers  # noqa: E402
from derivgraph.compiler.stamp import stamping  # noqa: E402
from derivgraph.tools.bench_scaling import scaling_model, scaling_spec  # noqa: E402


def main() -> None:
    args = ab_args(__doc__, 11)
    base = base_module(args.base, "derivgraph/compiler/lower_layers.py")
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

    def run(module: Any) -> Any:
        ctx.layouts = book  # the compile's book; the kept addresses dropped
        return module.provable_layers(ctx)

    want, got = run(base), run(lower_layers)
    assert [(t.template, t.rows) for t in want] == [(t.template, t.rows) for t in got] and got
    gc.collect()
    gc.disable()
    try:
        print("provable_layers (the compile's book, addresses read again):")  # noqa: T201
        report(alternate(args.rounds, {"base": lambda: run(base),
                                       "mine": lambda: run(lower_layers)}))
    finally:
        gc.enable()
        ctx.layouts = None
    del plan


if __name__ == "__main__":
    main()
