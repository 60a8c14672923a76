"""In-process A/B of the lowering's layer proof (``lower_layers.provable_layers``) at 100k
(stamped scaling): the base tree's ``lower_layers.py`` with the compile's layout book less the
source columns' records (what main's compile makes: every source column's facts read) against
this tree's with the whole book (the build's proven source columns recorded by
``planner._record_sources``; a shared node's facts read once). The same context and tables;
the kept addresses cleared before each call. Both must prove the same rows.

    PYTHONPATH=. python3 benchmarks/results/provable57/layer_proof_ab.py --base TREE [--rounds N]
"""

from __future__ import annotations

import gc
import sys
from typing import Any

sys.path.insert(0, "benchmarks/results")
from module_ab import ab_args, alternate, base_module, report  # noqa: E402

import derivgraph.planner as planner  # noqa: E402
from derivgraph.column_layout import ColumnLayouts  # noqa: E402
from derivgraph.compiler import lower as lower_module  # noqa: E402
from derivgraph.compiler import lower_layers  # noqa: E402
from derivgraph.compiler.stamp import stamping  # noqa: E402
from derivgraph.tools.bench_scaling import scaling_model, scaling_spec  # noqa: E402


def main() -> None:
    args = ab_args(__doc__, 11)
    old = base_module(args.base, "derivgraph/compiler/lower_layers.py").provable_layers
    kept: dict[str, Any] = {}
    record, proof = planner._record_sources, lower_layers.provable_layers

    def recording(book: ColumnLayouts, graph: Any) -> None:
        kept["sources"] = {id(t) for tensors, _ in graph.proven_sources for t in tensors}
        record(book, graph)

    def proving(ctx: Any) -> Any:
        kept["ctx"], kept["book"] = ctx, ctx.layouts
        return proof(ctx)

    planner._record_sources = recording
    lower_module.provable_layers = proving
    model = scaling_model(args.size // 4)
    with stamping(True):
        plan = planner.compile_plan(model, [scaling_spec()])
    ctx, mine, sources = kept["ctx"], kept["book"], kept["sources"]
    assert sources, "no proven source column (stamping by columns?)"
    base = ColumnLayouts()  # the book less the sources' records (what main's compile makes)
    base._of = {k: v for k, v in mine._of.items() if k not in sources}
    base._columns = {k: v for k, v in mine._columns.items() if k not in sources}
    base._held = mine._held

    def run(book: ColumnLayouts, prove: Any = proof) -> Any:
        ctx.layouts, ctx.address_memo = book, {}
        return prove(ctx)

    rows = [[t.rows for t in run(base, old)], [t.rows for t in run(mine)]]
    assert rows[0] == rows[1] and rows[0], "the two books prove other rows"
    print(f"{args.size} derived tensors; {len(sources)} proven source tensors; "
          f"{sum(map(len, rows[0]))} rows proven by both")
    gc.collect()
    gc.disable()
    times = alternate(args.rounds, {"base": lambda: run(base, old), "mine": lambda: run(mine)})
    gc.enable()
    ctx.layouts = None
    del plan
    report(times)


if __name__ == "__main__":
    main()
