"""In-process A/B of this branch's cut: after each warm compile at argv[1] (default 100000)
of this tree, the first gc.collect(0) with the copies base kept made again ("base": each held
entry column's ids, paths and owners as its own list, as base's adoption kept them; the
table's first column keeps the reader's list as before) or not ("mine"). Rounds alternate
the order; each round its own fresh model and compile."""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # first_collect_ab

from first_collect_ab import run  # noqa: E402

from derivgraph.compiler.graph import HeldDerived  # noqa: E402


def rebase(plan) -> int:
    """Base's copies: ids and paths per held column, owners per later column."""
    extra = 0
    held = [c for c in plan.entries.columns if type(c.nodes) is HeldDerived]
    for k, c in enumerate(held):
        c.ids, c.paths = list(c.ids), list(c.paths)
        extra += 2 * len(c.ids)
        if k:
            c.owners = list(c.owners)
            extra += len(c.owners)
    return extra


run(rebase)
