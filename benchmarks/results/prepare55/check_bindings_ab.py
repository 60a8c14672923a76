"""In-process A/B of ``check_bindings`` at 100k derived tensors (the scaling workload: four
declared names over 25k matched modules): the base tree's ``derivgraph/compiler/bind.py``
(each name reads the modules' classes, dicts and registries) against this tree's (read once
per spec: ``paths.ModuleOwners``), on one model's matches; process time, alternating.

    PYTHONPATH=. python3 benchmarks/results/prepare55/check_bindings_ab.py --base BASE_TREE
"""

from __future__ import annotations

import gc
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from module_ab import ab_args, alternate, base_module, report  # noqa: E402

from derivgraph.compiler import bind  # noqa: E402
from derivgraph.tools.bench_scaling import scaling_model, scaling_spec  # noqa: E402


def main() -> None:
    args = ab_args(__doc__, 11)
    base = base_module(args.base, "derivgraph/compiler/bind.py")
    model = scaling_model(args.size // 4)
    bound = bind.match_specs(model, [scaling_spec()])
    assert base.check_bindings(bound) == bind.check_bindings(bound) == []
    gc.collect()
    report(alternate(args.rounds, {"base": lambda: base.check_bindings(bound),
                                   "mine": lambda: bind.check_bindings(bound)}))


if __name__ == "__main__":
    main()
