"""In-process A/B of the holders' binding at 100k: ``Holders.bind`` with the compile's own
arguments (the bound sources, the held columns, the startup record and its reads, captured
from ``_lower``), the base tree's ``holders.py`` against this tree's, then each arm's first
``sources_intact`` (the check ``prepare`` runs) on what it bound.

    PYTHONPATH=TREE python3 benchmarks/results/startup64/bind_ab.py --base BASE_TREE
"""

from __future__ import annotations

import gc
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # module_ab

from module_ab import ab_args, alternate, base_module, report  # noqa: E402

from derivgraph import planner  # noqa: E402
from derivgraph.compiler.stamp import stamping  # noqa: E402
from derivgraph.runtime.holders import Holders  # noqa: E402
from derivgraph.tools.bench_scaling import scaling_model, scaling_spec  # noqa: E402


def main() -> None:
    args = ab_args(__doc__, 15)
    base = base_module(args.base, "derivgraph/runtime/holders.py")
    captured: dict[str, Any] = {}
    real = planner._lower

    def capture(plan: Any, values: Any, read: Any = None, held: Any = (), reads: Any = None) \
            -> None:
        captured.update(plan=plan, read=read, held=list(held), reads=reads)
        real(plan, values, read, held, reads)

    planner._lower = capture
    with stamping(True):
        planner.compile_plan(scaling_model(args.size // 4), [scaling_spec()])
    planner._lower = real
    plan, held, reads = captured["plan"], captured["held"], captured["reads"]
    sources, record = plan.tensors.sources, plan.source_ptrs
    check: dict[str, list[float]] = {"base": [], "mine": []}

    def arm(name: str, bind: Any) -> Any:
        def run() -> None:
            bind(plan.holders, sources, held, record, reads)
            start = time.process_time()
            assert plan.holders.sources_intact()
            check[name].append(time.process_time() - start)
        return run

    gc.disable()
    times = alternate(args.rounds, {"base": arm("base", base.Holders.bind),
                                    "mine": arm("mine", Holders.bind)})
    print("bind, then its first sources_intact:")
    report(times)
    print("the first sources_intact alone:")
    report(check)


if __name__ == "__main__":
    main()
