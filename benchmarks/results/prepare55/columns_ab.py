"""In-process A/B of ``evaluate_columns`` at 100k derived tensors (the scaling workload: the
``scale`` column read by two op columns): the base tree's ``derivgraph/compiler/columns.py``
against this tree's (an operand column checked and stacked once per table), each on a fresh
``CompileValues`` over one built graph; process time, alternating.

    PYTHONPATH=. python3 benchmarks/results/prepare55/columns_ab.py --base BASE_TREE
"""

from __future__ import annotations

import gc
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import torch  # noqa: E402
from module_ab import ab_args, alternate, base_module, report  # noqa: E402

from derivgraph.compiler import columns  # noqa: E402
from derivgraph.compiler.bind import match_specs  # noqa: E402
from derivgraph.compiler.build import build_graph  # noqa: E402
from derivgraph.compiler.stamp import stamping  # noqa: E402
from derivgraph.planner import CompileValues  # noqa: E402
from derivgraph.tools.bench_scaling import scaling_model, scaling_spec  # noqa: E402


def main() -> None:
    args = ab_args(__doc__, 9)
    base = base_module(args.base, "derivgraph/compiler/columns.py")
    model = scaling_model(args.size // 4)
    with stamping(True):
        graph = build_graph(model, match_specs(model, [scaling_spec()]))
    sources = dict(graph.read_sources)
    gc.collect()

    def run(module: object) -> None:
        interp = CompileValues(graph, sources)
        with torch.no_grad():
            assert module.evaluate_columns(graph, interp.env, interp.source_at) == 2

    report(alternate(args.rounds, {"base": lambda: run(base), "mine": lambda: run(columns)}))


if __name__ == "__main__":
    main()
