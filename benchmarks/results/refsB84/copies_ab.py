"""In-process A/B of this branch's cuts: after each warm compile at argv[1] (default 100000)
of this tree, the first gc.collect(0) with base's lists made again and kept ("base": the bound
sources' paths and addresses as their own lists, the compact lowering's written list a copy
of its order, each held column's metas and devices ``[value] * n``) or not ("mine"). Rounds
alternate the order; each round its own fresh model and compile."""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # first_collect_ab

from first_collect_ab import run  # noqa: E402

from derivgraph.compiler.graph import HeldDerived, Same  # noqa: E402


def rebase(plan) -> int:
    """Base's lists made again: the bound sources' paths and addresses, the written list, each
    held column's metas and devices."""
    extra = 0
    holders = plan.holders
    bound = holders._sources
    holders._sources = bound._replace(paths=list(bound.paths), ptrs=list(bound.ptrs))
    extra += 2 * len(bound.paths)
    steps = plan.programs.lowered
    if steps._written is steps._order:
        steps._written = list(steps._order)
        extra += len(steps._order)
    seen = set()
    for c in plan.entries.columns:
        nodes = c.nodes
        if type(nodes) is HeldDerived and id(nodes) not in seen:
            seen.add(id(nodes))
            for name in ("metas", "devices"):
                value = getattr(nodes, name)
                if type(value) is Same:
                    setattr(nodes, name, list(value))
                    extra += len(value)
    return extra


run(rebase)
