"""In-process A/B of ``stamp_columns._groups`` (the (spec, class) groups ``Stacks.later``
finds once per stamper) over the scaling model's 25k bound specs: the base tree's module
loaded by path beside this tree's, 10 calls per arm per round, arms alternated, gc off.

    PYTHONPATH=. python benchmarks/results/front61/groups_ab.py /tmp/base_front61 [ROUNDS]
"""

from __future__ import annotations

import gc
import sys
from pathlib import Path
from types import ModuleType

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/results: module_ab

from module_ab import alternate, base_module, report  # noqa: E402

from derivgraph.compiler import stamp_columns  # noqa: E402
from derivgraph.compiler.bind import match_specs  # noqa: E402
from derivgraph.tools.bench_scaling import scaling_model, scaling_spec  # noqa: E402


def main() -> None:
    base = base_module(sys.argv[1], "derivgraph/compiler/stamp_columns.py")
    rounds = int(sys.argv[2]) if len(sys.argv) > 2 else 21
    bounds = match_specs(scaling_model(25000), [scaling_spec()])
    assert base._groups(bounds) == stamp_columns._groups(bounds), "the arms differ"

    def run(module: ModuleType) -> None:
        for _ in range(10):
            module._groups(bounds)

    gc.disable()
    report(alternate(rounds, {"base": lambda: run(base), "mine": lambda: run(stamp_columns)}))


if __name__ == "__main__":
    main()
