"""In-process A/B of the compile's adoption (``adoption.adopt_or_allocate``, reads only) on
one prepared stamped scaling plan, each call with a fresh reader of the model: the base
tree's ``PathReader`` (``compiler/owners.py`` loaded by path) against this tree's,
alternating (process time; the collector off, as in ``compile_plan``).

    PYTHONPATH=TREE python3 benchmarks/results/middle58/adopt_ab.py --base BASE_TREE \
        [--size 100000] [--rounds 12]
"""

from __future__ import annotations

import gc
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # module_ab

from module_ab import ab_args, alternate, base_module, report  # noqa: E402

from derivgraph import planner  # noqa: E402
from derivgraph.adoption import adopt_or_allocate  # noqa: E402
from derivgraph.compiler.owners import PathReader  # noqa: E402
from derivgraph.compiler.stamp import stamping  # noqa: E402
from derivgraph.tools.bench_scaling import scaling_model, scaling_spec  # noqa: E402


def main() -> None:
    args = ab_args(__doc__, 12)
    base = base_module(args.base, "derivgraph/compiler/owners.py")
    model = scaling_model(args.size // 4)
    with stamping(True):
        plan, values, _, _ = planner._prepare(model, [scaling_spec()], False, True)
    arms = {"base": lambda: adopt_or_allocate(plan, values, base.PathReader(model), []),
            "mine": lambda: adopt_or_allocate(plan, values, PathReader(model), [])}
    a, b = (fn() for fn in arms.values())
    assert [x[0].node.id for x in a] == [x[0].node.id for x in b]
    gc.disable()  # as compile_plan does (adoption makes 100k entries)
    report(alternate(args.rounds, arms))


if __name__ == "__main__":
    main()
