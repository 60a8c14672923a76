"""In-process A/B of ``BoundTensors.bind`` at 100k derived tensors (the scaling workload: no
view op): the base tree's ``derivgraph/runtime/storage.py`` (the bound table and the view
sweep) against this tree's (:func:`~derivgraph.runtime.storage.may_view` skips both), on one
compiled plan, the sources as the compile passes them; process time, alternating.

    PYTHONPATH=. python3 benchmarks/results/prepare55/bind_tensors_ab.py --base BASE_TREE
"""

from __future__ import annotations

import gc
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from module_ab import ab_args, alternate, base_module, report  # noqa: E402

from derivgraph.compiler.stamp import stamping  # noqa: E402
from derivgraph.planner import compile_plan  # noqa: E402
from derivgraph.runtime import storage  # noqa: E402
from derivgraph.tools.bench_scaling import scaling_model, scaling_spec  # noqa: E402


def main() -> None:
    args = ab_args(__doc__, 9)
    base = base_module(args.base, "derivgraph/runtime/storage.py")
    model = scaling_model(args.size // 4)
    with stamping(True):
        plan = compile_plan(model, [scaling_spec()])
    tensors = plan.tensors
    read = dict(tensors.sources)
    gc.collect()

    def run(cls: type) -> None:
        cls.bind(tensors, model, read)
        assert tensors.views == {}

    report(alternate(args.rounds, {"base": lambda: run(base.BoundTensors),
                                   "mine": lambda: run(storage.BoundTensors)}))


if __name__ == "__main__":
    main()
