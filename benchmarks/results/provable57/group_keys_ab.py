"""In-process A/B of the group keys' facts (``schedule_layers.same_key_facts``) at 100k (stamped
scaling), each written template step of the proven layer: the base tree's (sweeps the rows'
meta values) against this tree's (a layer the lowering proved, ``LayerSteps.metas``, is not
swept again); the compile's layout book set, as during the compile. Both must answer alike.

    PYTHONPATH=. python3 benchmarks/results/provable57/group_keys_ab.py --base TREE [--rounds N]
"""

from __future__ import annotations

import gc
import sys
from typing import Any

sys.path.insert(0, "benchmarks/results")
from module_ab import ab_args, alternate, base_module, report  # noqa: E402

import derivgraph.planner as planner  # noqa: E402
from derivgraph.column_layout import ColumnLayouts  # noqa: E402
from derivgraph.compiler.lower import Action, lower_steps  # noqa: E402
from derivgraph.compiler.schedule_layers import same_key_facts  # noqa: E402
from derivgraph.compiler.stamp import stamping  # noqa: E402
from derivgraph.tools.bench_scaling import scaling_model, scaling_spec  # noqa: E402


def main() -> None:
    args = ab_args(__doc__, 11)
    old = base_module(args.base, "derivgraph/compiler/schedule_layers.py").same_key_facts
    books: list[ColumnLayouts] = []

    class Kept(ColumnLayouts):
        __slots__ = ()

        def __init__(self) -> None:
            super().__init__()
            books.append(self)

    planner.ColumnLayouts = Kept  # type: ignore[misc]
    with stamping(True):
        plan = planner.compile_plan(scaling_model(args.size // 4), [scaling_spec()])
    ctx = plan.tensors
    ctx.layouts = books[0]
    (layer,) = lower_steps(ctx).layers
    assert layer.metas is ctx.meta_env
    n = len(layer.table.rows)
    steps = [s for s in layer.steps if s.action is Action.OUT]

    def run(facts: Any) -> list[bool]:
        return [facts(ctx, layer, step, n) for step in steps]

    assert run(old) == run(same_key_facts) == [True] * len(steps), "the answers differ"
    print(f"{args.size} derived tensors; {len(steps)} written template steps, {n} rows")
    gc.collect()
    gc.disable()
    times = alternate(args.rounds, {"base": lambda: run(old), "mine": lambda: run(same_key_facts)})
    gc.enable()
    ctx.layouts = None
    report(times)


if __name__ == "__main__":
    main()
