"""In-process A/B of ``Holders.bind`` as ``_lower`` calls it at 100k (stamped scaling), both with
the startup record: the base tree's ``holders.py`` (makes the sources' owner-path prefixes in
every bind) against this tree's (``source_hops``: made when first asked); the same plan,
sources and held columns; the kept source table and the hops asserted equal first.

    PYTHONPATH=. python3 benchmarks/results/provable57/holders_bind_ab.py --base TREE [--rounds N]
"""

from __future__ import annotations

import gc
import sys
from typing import Any

sys.path.insert(0, "benchmarks/results")
from module_ab import ab_args, alternate, base_module, report  # noqa: E402

import derivgraph.planner as planner  # noqa: E402
from derivgraph.compiler.stamp import stamping  # noqa: E402
from derivgraph.tools.bench_scaling import scaling_model, scaling_spec  # noqa: E402


def main() -> None:
    args = ab_args(__doc__, 9)
    base = base_module(args.base, "derivgraph/runtime/holders.py")
    got: dict[str, Any] = {}
    lower = planner._lower

    def capture(plan: Any, values: Any, read: Any = None, held: Any = ()) -> None:
        got["args"] = (plan, read, held)
        lower(plan, values, read, held)

    planner._lower = capture
    with stamping(True):
        planner.compile_plan(scaling_model(args.size // 4), [scaling_spec()])
    plan, _read, held = got["args"]
    sources, holders = plan.tensors.sources, plan.holders

    def mine() -> None:
        holders.bind(sources, held, plan.source_ptrs)

    def base_arm() -> None:
        base.Holders.bind(holders, sources, held, plan.source_ptrs)

    mine()
    kept = list(holders._sources)
    assert holders._source_hops is None
    hops = holders.source_hops()
    base_arm()
    assert kept == holders._sources, "the kept source table differs"
    assert hops == holders._source_hops, "the hops differ"
    gc.collect()
    gc.disable()
    report(alternate(args.rounds, {"base": base_arm, "mine": mine}))


if __name__ == "__main__":
    main()
