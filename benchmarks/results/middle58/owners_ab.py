"""In-process A/B of a fresh ``PathReader``'s first ``owners`` walk over a stamped column's
owner paths (``layers.1`` .. ``layers.N-1`` of the scaling model, as adoption's first column
asks): the base tree's ``compiler/owners.py`` (loaded by path) against this tree's,
alternating (process time; each call a fresh reader of the same model).

    PYTHONPATH=TREE python3 benchmarks/results/middle58/owners_ab.py --base BASE_TREE \
        [--size 100000] [--rounds 20]
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # module_ab

from module_ab import ab_args, alternate, base_module, report  # noqa: E402

from derivgraph.compiler.owners import PathReader  # noqa: E402
from derivgraph.tools.bench_scaling import scaling_model  # noqa: E402


def main() -> None:
    args = ab_args(__doc__, 20)
    base = base_module(args.base, "derivgraph/compiler/owners.py")
    layers = args.size // 4
    model = scaling_model(layers)
    paths = [f"layers.{i}" for i in range(1, layers)]
    arms = {"base": lambda: base.PathReader(model).owners(paths),
            "mine": lambda: PathReader(model).owners(paths)}
    a, b = (fn() for fn in arms.values())
    assert len(a) == len(b) and all(x is y for x, y in zip(a, b))
    report(alternate(args.rounds, arms))


if __name__ == "__main__":
    main()
