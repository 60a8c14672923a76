"""In-process A/B of this branch's two pieces on one compiled 100k stamped scaling plan.

    PYTHONPATH=. python3 benchmarks/results/lower60/bind_ab.py --base /tmp/base_lower60 --rounds 11

* ``startup+bind``: the sources read as the startup record reads them, then ``Holders.bind``
  of them (the base: ``PathReader.get`` per path, then ``bind`` reading ``holder_dicts``
  again; this tree: ``read_paths``, then ``bind`` taking its holder dicts). Both arms read
  through a fresh ``PathReader`` (the compile's reader is adoption's, its owners walked).
* ``bound_values``: every column of the stamped table as ``_columns_hold`` reads it (the base
  tree's ``BoundTensors.bound_values`` against this tree's, on the same bound tensors).
Arms alternate in one process, the order reversed every other round; collector off.
"""

from __future__ import annotations

import gc
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # module_ab

from module_ab import ab_args, alternate, base_module, report  # noqa: E402

from derivgraph.compiler.layers import closed_layers  # noqa: E402
from derivgraph.compiler.owners import PathReader  # noqa: E402
from derivgraph.compiler.stamp import stamping  # noqa: E402
from derivgraph.planner import compile_plan  # noqa: E402
from derivgraph.runtime.accessors import read_paths  # noqa: E402
from derivgraph.tools.bench_scaling import scaling_model, scaling_spec  # noqa: E402


def main() -> None:
    args = ab_args(__doc__, 11)
    base_storage = base_module(args.base, "derivgraph/runtime/storage.py")
    base_holders = base_module(args.base, "derivgraph/runtime/holders.py")
    with stamping(True):
        plan = compile_plan(scaling_model(args.size // 4), [scaling_spec()])
    model, holders = plan.model, plan.holders
    paths = [*plan.graph.sources(), *plan.folds.entries]
    sources = plan.tensors.sources
    unbound = object()

    def base_bind() -> None:
        reader = PathReader(model)
        read = dict(zip(paths, map(reader.get, paths)))
        base_holders.Holders.bind(holders, {p: read[p] for p in sources})

    def mine_bind() -> None:
        objects, reads = read_paths(PathReader(model), paths)
        read = dict(zip(paths, objects))
        holders.bind({p: read[p] for p in sources}, (), None, reads)

    tensors = plan.tensors
    columns = [list(c) for table in closed_layers(plan.graph) for c in zip(*table.rows)]

    def base_values() -> Any:
        return [base_storage.BoundTensors.bound_values(tensors, c, unbound) for c in columns]

    def mine_values() -> Any:
        return [tensors.bound_values(c, unbound) for c in columns]

    for a, b in zip(base_values(), mine_values()):
        assert len(a) == len(b) and all(x is y for x, y in zip(a, b))
    gc.collect()
    gc.disable()
    try:
        print("startup+bind (fresh reader):")  # noqa: T201
        report(alternate(args.rounds, {"base": base_bind, "mine": mine_bind}))
        print("bound_values over the stamped columns:")  # noqa: T201
        report(alternate(args.rounds, {"base": base_values, "mine": mine_values}))
    finally:
        gc.enable()


if __name__ == "__main__":
    main()
