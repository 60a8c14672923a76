"""In-process A/B of two answers ``Plan.prepare`` asks once at 100k (stamped scaling compile):
``Plan._on_cuda`` (whether any bound tensor is on CUDA) and ``Plan._opaque`` (the opaque engine
tensors), the base tree's ``runtime/plan.py`` (loaded by path: every entry's storage read, every
entry swept) against this tree's (the entry columns' layout records; the generic entries only),
on one compiled plan with the compile's layout book set again, each answer's cache cleared
before each call; collector off. Both arms' answers are checked equal first.

    PYTHONPATH=. python benchmarks/results/adopt60/prepare_ab.py \
        --base /tmp/base_adopt60 --rounds 15
"""

from __future__ import annotations

import gc
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from module_ab import ab_args, alternate, base_module, report  # noqa: E402

from derivgraph.compiler.stamp import stamping  # noqa: E402
from derivgraph.planner import compile_plan  # noqa: E402
from derivgraph.runtime import plan as plan_module  # noqa: E402
from derivgraph.tools.bench_scaling import scaling_model, scaling_spec  # noqa: E402


def main() -> None:
    args = ab_args(__doc__, 15)
    base = base_module(args.base, "derivgraph/runtime/plan.py")
    kept: dict[str, Any] = {}
    prepare = plan_module.Plan.prepare

    def spy(self: Any) -> None:
        kept["book"] = self.tensors.layouts  # the compile's book, as prepare sees it
        prepare(self)

    plan_module.Plan.prepare = spy  # type: ignore[method-assign]
    with stamping(True):
        plan = compile_plan(scaling_model(args.size // 4), [scaling_spec()])
    plan_module.Plan.prepare = prepare  # type: ignore[method-assign]
    plan.tensors.layouts = kept["book"]

    def answers(cls: Any) -> tuple[bool, list[str]]:
        plan._cuda, plan._opaque_ids = None, None
        return cls._on_cuda(plan), cls._opaque(plan)

    assert answers(base.Plan) == answers(plan_module.Plan)
    gc.collect()
    gc.disable()
    report(alternate(args.rounds, {"base": lambda: answers(base.Plan),
                                   "mine": lambda: answers(plan_module.Plan)}))


if __name__ == "__main__":
    main()
