"""In-process A/B of ``holder_dicts`` as ``Holders.bind`` calls it at 100k (stamped scaling: 50k
sources, two names over the same 25k layers): the base tree's ``accessors.py`` (each name's
owners read afresh) against this tree's (one ``RegistryReads`` shared by the names); the
answers asserted equal (identity of every row's dict) first.

    PYTHONPATH=. python3 benchmarks/results/prologue56/holder_dicts_ab.py --base TREE [--rounds N]
"""

from __future__ import annotations

import gc
import sys
from typing import Any

sys.path.insert(0, "benchmarks/results")
from module_ab import ab_args, alternate, base_module, report  # noqa: E402

import derivgraph.planner as planner  # noqa: E402
from derivgraph.compiler.stamp import stamping  # noqa: E402
from derivgraph.paths import MISSING  # noqa: E402
from derivgraph.runtime.accessors import holder_dicts  # noqa: E402
from derivgraph.tools.bench_scaling import scaling_model, scaling_spec  # noqa: E402


def main() -> None:
    args = ab_args(__doc__, 11)
    base = base_module(args.base, "derivgraph/runtime/accessors.py")
    got: dict[str, Any] = {}
    lower = planner._lower

    def capture(plan: Any, values: Any, read: Any = None, held: Any = ()) -> None:
        lower(plan, values, read, held)
        got["plan"] = plan

    planner._lower = capture
    with stamping(True):
        planner.compile_plan(scaling_model(args.size // 4), [scaling_spec()])
    plan = got["plan"]
    split = [p.rpartition(".") for p in plan.tensors.sources]
    objects = plan.holders.hops.objects
    owners = [objects.get(owner, MISSING) for owner, _, _ in split]
    names = [name for _, _, name in split]
    mine_out, base_out = holder_dicts(owners, names), base.holder_dicts(owners, names)
    assert all(a[0] is b[0] and a[1] == b[1] for a, b in zip(mine_out, base_out))
    gc.collect()
    gc.disable()
    report(alternate(args.rounds, {"base": lambda: base.holder_dicts(owners, names),
                                   "mine": lambda: holder_dicts(owners, names)}))


if __name__ == "__main__":
    main()
