"""In-process A/B of the whole stamped scaling compile: the base tree's ``planner`` (loaded by
path, its imports this tree's modules) against this tree's, alternating (process time of
``compile_plan`` only; a fresh model each compile, collected before).

    PYTHONPATH=TREE python3 benchmarks/results/middle58/compile_ab.py --base BASE_TREE \
        [--size 100000] [--rounds 8]
"""

from __future__ import annotations

import gc
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # module_ab

from module_ab import ab_args, base_module, report  # noqa: E402

from derivgraph import planner  # noqa: E402
from derivgraph.compiler.stamp import stamping  # noqa: E402
from derivgraph.tools.bench_scaling import scaling_model, scaling_spec  # noqa: E402


def main() -> None:
    args = ab_args(__doc__, 8)
    base = base_module(args.base, "derivgraph/planner.py")
    spec = scaling_spec()
    arms = {"base": base.compile_plan, "mine": planner.compile_plan}
    with stamping(True):
        for fn in arms.values():  # warm-up
            fn(scaling_model(250), [spec])
    times: dict[str, list[float]] = {name: [] for name in arms}
    for r in range(args.rounds):
        order = list(arms.items())
        if r % 2:
            order.reverse()
        for name, fn in order:
            model = scaling_model(args.size // 4)
            gc.collect()
            with stamping(True):
                start = time.process_time()
                plan = fn(model, [spec])
                times[name].append(time.process_time() - start)
            del plan, model
    report(times)


if __name__ == "__main__":
    main()
