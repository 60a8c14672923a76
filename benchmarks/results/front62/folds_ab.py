"""In-process A/B of ``compile_folds`` at 100k derived tensors (the stamped scaling workload,
which declares no fold: the call the compile makes after ``build_graph``), the base tree's
``fold.py`` loaded by path beside this tree's; arms alternated, the order reversed every other
round, gc off. Both arms must give the same (empty) fold set and issues.

    PYTHONPATH=. python benchmarks/results/front62/folds_ab.py --base /tmp/base_front62 --rounds 21
"""

from __future__ import annotations

import gc
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from module_ab import ab_args, alternate, base_module, report  # noqa: E402

from derivgraph.compiler import fold  # noqa: E402
from derivgraph.compiler.bind import match_specs  # noqa: E402
from derivgraph.compiler.build import build_graph  # noqa: E402
from derivgraph.compiler.stamp import stamping  # noqa: E402
from derivgraph.tools.bench_scaling import scaling_model, scaling_spec  # noqa: E402


def main() -> None:
    args = ab_args(__doc__, 21)
    base = base_module(args.base, "derivgraph/compiler/fold.py")
    model = scaling_model(args.size // 4)
    bound = match_specs(model, [scaling_spec()])
    with stamping(True):
        graph = build_graph(model, bound)
    got = {}

    def arm(module):  # noqa: ANN001, ANN202
        def run() -> None:
            issues: list = []
            got[module.__name__] = (list(module.compile_folds(model, bound, issues,
                                                               graph.derived).entries), issues)
        return run

    gc.collect()
    gc.disable()
    times = alternate(args.rounds, {"base": arm(base), "mine": arm(fold)})
    gc.enable()
    assert got["base_fold"] == got["derivgraph.compiler.fold"] == ([], [])
    print(f"compile_folds at {args.size} derived tensors ({len(bound)} bound specs)")
    report(times)


if __name__ == "__main__":
    main()
