"""In-process A/B of the owner walk (``HopTable``) at 100k derived tensors (the scaling
workload): the base tree's ``derivgraph/runtime/accessors.py`` against this tree's, over the
paths ``Holders.walk`` passes at the compile (the sources' owner paths, then every entry's),
process time, alternating; ``--gc``: the collector left on (as the compile runs), else off.

    PYTHONPATH=. python3 benchmarks/results/prepare57/hops_ab.py --base BASE_TREE [--gc]
"""

from __future__ import annotations

import gc
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from module_ab import alternate, base_module, report  # noqa: E402

from derivgraph.compiler.stamp import stamping  # noqa: E402
from derivgraph.planner import compile_plan  # noqa: E402
from derivgraph.runtime import accessors  # noqa: E402
from derivgraph.tools.bench_scaling import scaling_model, scaling_spec  # noqa: E402


def main() -> None:
    collect = "--gc" in sys.argv
    if collect:
        sys.argv.remove("--gc")
    from module_ab import ab_args
    args = ab_args(__doc__, 15)
    base = base_module(args.base, "derivgraph/runtime/accessors.py")
    model = scaling_model(args.size // 4)
    with stamping(True):
        plan = compile_plan(model, [scaling_spec()])
    holders = plan.holders
    paths = [s.rpartition(".")[0] for s, *_ in holders._sources] \
        + [e.node.owner_path for e in holders.entries.values()]
    fields = ("objects", "prefixes", "parts", "parents", "keys", "slow")
    a, b = base.HopTable(model, paths), accessors.HopTable(model, paths)
    assert all(getattr(a, f) == getattr(b, f) for f in fields)
    assert list(a.objects) == list(b.objects)  # in the same order
    assert {k: v for k, v in a.children.items() if v} == b.children  # no leaf's empty list
    assert list(map(id, a.expected)) == list(map(id, b.expected))
    del a, b
    gc.collect()
    if not collect:
        gc.disable()
    report(alternate(args.rounds, {"base": lambda: base.HopTable(model, paths),
                                   "mine": lambda: accessors.HopTable(model, paths)}))


if __name__ == "__main__":
    main()
