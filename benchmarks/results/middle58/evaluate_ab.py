"""In-process A/B of the compile's evaluation (``planner._evaluate_all``) on one prepared
stamped scaling graph: the base tree's ``planner`` (loaded by path, its imports this tree's
modules: its ``derived_columns`` call hands no column proof, so it sweeps every position)
against this tree's, alternating (process time; each call a fresh env and layout book; the
collector off, as in ``compile_plan``).

    PYTHONPATH=TREE python3 benchmarks/results/middle58/evaluate_ab.py --base BASE_TREE \
        [--size 100000] [--rounds 12]
"""

from __future__ import annotations

import gc
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # module_ab

from module_ab import ab_args, alternate, base_module, report  # noqa: E402

from derivgraph import planner  # noqa: E402
from derivgraph.column_layout import ColumnLayouts  # noqa: E402
from derivgraph.compiler.stamp import stamping  # noqa: E402
from derivgraph.tools.bench_scaling import scaling_model, scaling_spec  # noqa: E402


def main() -> None:
    args = ab_args(__doc__, 12)
    base = base_module(args.base, "derivgraph/planner.py")
    with stamping(True):
        plan, _, _, _ = planner._prepare(scaling_model(args.size // 4), [scaling_spec()],
                                         False, True)
    graph = plan.graph
    arms = {"base": lambda: base._evaluate_all(graph, None, ColumnLayouts()),
            "mine": lambda: planner._evaluate_all(graph, None, ColumnLayouts())}
    for fn in arms.values():
        fn()  # warm-up
    gc.disable()  # as compile_plan does
    report(alternate(args.rounds, arms))


if __name__ == "__main__":
    main()
