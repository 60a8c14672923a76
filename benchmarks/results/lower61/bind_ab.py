"""In-process A/B of ``Holders.bind`` with the compile's own arguments, on one compiled 100k
stamped scaling plan: the base tree's ``holders.py`` (its ``bind``, ``walk``, ``refresh`` and
``recorded_ptrs``; the shared ``holders_of`` reads each column's owner paths when not handed
them) against this tree's. Each arm re-binds the plan's ``Holders`` with the sources, held
columns, recorded addresses and reads the compile handed it; the tables are asserted equal
first. Arms alternate, the order reversed every other round; collector off.

    PYTHONPATH=. python3 benchmarks/results/lower61/bind_ab.py --base /tmp/base_lower61 --rounds 11
"""

from __future__ import annotations

import gc
import operator
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # module_ab

from module_ab import ab_args, alternate, base_module, report  # noqa: E402

from derivgraph.compiler.stamp import stamping  # noqa: E402
from derivgraph.planner import compile_plan  # noqa: E402
from derivgraph.runtime.holders import Holders  # noqa: E402
from derivgraph.tools.bench_scaling import scaling_model, scaling_spec  # noqa: E402


def main() -> None:
    args = ab_args(__doc__, 11)
    base = base_module(args.base, "derivgraph/runtime/holders.py")
    seen: dict[str, Any] = {}
    real = Holders.bind

    def spy(self: Holders, *a: Any) -> None:
        seen["args"] = a
        real(self, *a)

    Holders.bind = spy  # type: ignore[method-assign]
    with stamping(True):
        plan = compile_plan(scaling_model(args.size // 4), [scaling_spec()])
    Holders.bind = real  # type: ignore[method-assign]
    holders, bound = plan.holders, seen["args"]

    def tables() -> tuple[Any, ...]:
        t = holders.table
        return (t.id_list, t.dicts, t.keys, t.fast, t.ptrs, [s[:2] + s[3:] for s in
                                                               holders._sources])

    base.Holders.bind(holders, *bound)
    want = tables()
    holders.bind(*bound)
    got = tables()
    for a, b in zip(want, got):
        assert len(a) == len(b) and all(map(operator.is_, a, b)) or a == b
    gc.collect()
    gc.disable()
    try:
        print("Holders.bind (the compile's arguments):")  # noqa: T201
        report(alternate(args.rounds, {"base": lambda: base.Holders.bind(holders, *bound),
                                       "mine": lambda: holders.bind(*bound)}))
    finally:
        gc.enable()


if __name__ == "__main__":
    main()
