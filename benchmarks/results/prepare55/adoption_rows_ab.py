"""In-process A/B of adoption's column rows at 100k derived tensors (``allocated_rows`` and
``alias_rows`` of the scaling workload: four columns over one table's 25k owners): the base
tree's ``derivgraph/adoption_columns.py`` (each column reads its owners' classes, dicts and
registries) against this tree's (read once per table: ``paths.ModuleOwners``), on one graph,
its values and a reader that walked the owners; process time, alternating.

    PYTHONPATH=. python3 benchmarks/results/prepare55/adoption_rows_ab.py --base BASE_TREE
"""

from __future__ import annotations

import gc
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from module_ab import ab_args, base_module, report  # noqa: E402

from derivgraph import adoption_columns  # noqa: E402
from derivgraph.adoption import AliasOf, _slot  # noqa: E402
from derivgraph.compiler.owners import PathReader  # noqa: E402
from derivgraph.compiler.stamp import stamping  # noqa: E402
from derivgraph.planner import compile_plan  # noqa: E402
from derivgraph.tools.bench_scaling import scaling_model, scaling_spec  # noqa: E402


def main() -> None:
    args = ab_args(__doc__, 9)
    base = base_module(args.base, "derivgraph/adoption_columns.py")
    with stamping(True):
        plan = compile_plan(scaling_model(args.size // 4), [scaling_spec()])
    graph, model = plan.graph, scaling_model(args.size // 4)  # a fresh model: nothing bound
    values = {n: 0 for n in graph.derived}
    values.update({n: e.storage for n, e in plan.entries.items()})
    owners = PathReader(model)
    owners.owners([e.node.owner_path for e in plan.entries.values()])
    gc.collect()
    gc.disable()  # as the compile runs it (a collection of the entries made would dominate)

    times: dict[str, list[float]] = {"base": [], "mine": []}
    for r in range(args.rounds):  # alternating, the order reversed every other round
        arms = [("base", base), ("mine", adoption_columns)]
        for name, module in arms if r % 2 == 0 else arms[::-1]:
            start = time.process_time()
            if module is base:
                out = module.allocated_rows(graph, values, owners, _slot)
                out.update(module.alias_rows(graph, values, owners, AliasOf))
            else:  # as adopt_or_allocate calls them: one owners' reading shared
                read: list = []
                out = module.allocated_rows(graph, values, owners, _slot, None, read)
                out.update(module.alias_rows(graph, values, owners, AliasOf, None, read))
            times[name].append(time.process_time() - start)
            assert len(out) == args.size - 4
            del out
            gc.collect()  # not timed: the entries made, freed between arms
    report(times)


if __name__ == "__main__":
    main()
