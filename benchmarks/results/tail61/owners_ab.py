"""In-process A/B of ``paths.ModuleOwners`` at 100k: one reading of the 25k scaling layers
asked the scaling spec's four names (what ``bind._free_names`` and adoption's columns each
do: a fresh reading per site), the base tree's ``paths.py`` loaded by path against this
tree's. Answers checked equal first (the four names and names the layers hold); collector
off; process time.

    PYTHONPATH=. python benchmarks/results/tail61/owners_ab.py --base /tmp/base_tail61 --rounds 15
"""

from __future__ import annotations

import gc
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from module_ab import ab_args, alternate, base_module, report  # noqa: E402

from derivgraph import paths  # noqa: E402
from derivgraph.tools.bench_scaling import scaling_model, scaling_spec  # noqa: E402


def main() -> None:
    args = ab_args(__doc__, 15)
    base = base_module(args.base, "derivgraph/paths.py").ModuleOwners
    layers = list(scaling_model(args.size // 4).layers)
    names = [decl.name for decl in scaling_spec().derived]
    print(f"{len(layers)} owners, names {names}")

    def run(cls: type, asked: list[str]) -> list[bool]:
        owners = cls(layers)
        return [owners.absent(name) for name in asked]

    both = names + ["scale", "weight", "training", "missing"]
    assert run(base, both) == run(paths.ModuleOwners, both), "answers differ"
    gc.disable()
    report(alternate(args.rounds, {"base": lambda: run(base, names),
                                   "mine": lambda: run(paths.ModuleOwners, names)}))


if __name__ == "__main__":
    main()
