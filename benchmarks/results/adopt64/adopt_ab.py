"""In-process A/B of ``adoption.adopt_or_allocate`` on one 100k stamped compile's prepared
objects (``planner._prepare`` up to adoption, in this tree): the base tree's
``adoption.py`` with its own ``adoption_columns.py`` against this tree's, each on a fresh
owner reader, alternating; each arm's answer (ids, positions, every slot's entry facts and
extra) asserted equal first.

    cd TREE && PYTHONPATH=. python3 benchmarks/results/adopt64/adopt_ab.py --base /tmp/base_adopt64
"""

from __future__ import annotations

import gc
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from module_ab import ab_args, alternate, base_module, report  # noqa: E402

from derivgraph import adoption  # noqa: E402
from derivgraph.compiler.owners import PathReader  # noqa: E402
from derivgraph.compiler.stamp import stamping  # noqa: E402
from derivgraph.planner import _prepare  # noqa: E402
from derivgraph.tools.bench_scaling import scaling_model, scaling_spec  # noqa: E402


def _facts(planned: list[Any]) -> list[tuple]:
    return [(e.id, id(e.node), id(e.storage), e.slot, e.adopted,
             x if isinstance(x, (adoption.AliasOf, adoption.ViewOf)) else id(x))
            for e, x in planned]


def main() -> None:
    args = ab_args(__doc__, 15)
    base_columns = base_module(args.base, "derivgraph/adoption_columns.py")
    base = base_module(args.base, "derivgraph/adoption.py")
    base.allocated_rows, base.alias_rows = base_columns.allocated_rows, base_columns.alias_rows
    base.AliasOf, base.ViewOf = adoption.AliasOf, adoption.ViewOf  # one class each: comparable
    model = scaling_model(args.size // 4)
    with stamping(True):
        plan, values, _, _ = _prepare(model, [scaling_spec()], False, True)

    def arm(module: Any) -> Any:
        def run() -> Any:
            proven: list[Any] = []
            order: list[Any] = []
            planned = module.adopt_or_allocate(plan, values, PathReader(model), proven, order)
            return planned, proven, order
        return run

    arms = {"base": arm(base), "mine": arm(adoption)}
    (bp, bproven, border), (mp, mproven, morder) = arms["base"](), arms["mine"]()
    assert _facts(bp) == _facts(mp) and border == morder
    assert [(c.ids, c.template, c.k, c.owners, c.paths, c.slot) for c in bproven] == \
        [(c.ids, c.template, c.k, c.owners, c.paths, c.slot) for c in mproven]
    del bp, mp, bproven, mproven
    print(f"answers equal ({len(border[0])} entries, {len(border[1])} outside the columns)")
    gc.collect()
    gc.disable()
    report(alternate(args.rounds, arms))


if __name__ == "__main__":
    main()
