"""In-process A/B of the owner walk (:class:`~derivgraph.runtime.accessors.HopTable`) over a
100k compile's owner paths (the sources' two per layer, then the entries' four per layer, as
:meth:`Holders.walk` passes them): the base tree's ``accessors.py`` against this tree's.

    PYTHONPATH=TREE python3 benchmarks/results/startup64/hops_ab.py --base BASE_TREE
"""

from __future__ import annotations

import gc
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # module_ab

from module_ab import ab_args, alternate, base_module, report  # noqa: E402

from derivgraph.runtime.accessors import HopTable  # noqa: E402
from derivgraph.tools.bench_scaling import scaling_model  # noqa: E402


def main() -> None:
    args = ab_args(__doc__, 21)
    base = base_module(args.base, "derivgraph/runtime/accessors.py")
    layers = args.size // 4
    model = scaling_model(layers)
    paths = [f"layers.{i}" for i in range(layers) for _ in range(2)] \
        + [f"layers.{i}" for i in range(layers) for _ in range(4)]
    mine, theirs = HopTable(model, paths), base.HopTable(model, paths)
    assert (mine.prefixes, mine.parts, mine.parents, mine.children, mine.keys, mine.slow) \
        == (theirs.prefixes, theirs.parts, theirs.parents, theirs.children, theirs.keys,
            theirs.slow)
    gc.disable()
    report(alternate(args.rounds, {"base": lambda: base.HopTable(model, paths),
                                   "mine": lambda: HopTable(model, paths)}))


if __name__ == "__main__":
    main()
