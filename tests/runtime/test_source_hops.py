"""The prefixes of the bound sources' owner paths (``Holders.source_hops``): made when a walk
under rebuilt owners first asks for them, not by every bind, and then the very set
``path_prefixes`` gives of the owner paths the bind kept. Canary (the existing
``test_source_owner_rebuilt``): hops made empty, a rebuilt source owner goes unseen.
"""

from __future__ import annotations

from derivgraph import compile_plan
from derivgraph.compiler.owners import path_prefixes
from derivgraph.compiler.stamp import stamping
from derivgraph.runtime.holders import Holders
from derivgraph.tools.bench_scaling import scaling_model, scaling_spec


def test_the_source_hops_are_made_when_first_asked() -> None:
    model = scaling_model(6)
    with stamping(True):
        plan = compile_plan(model, [scaling_spec()])
    holders: Holders = plan.holders
    assert holders._source_hops is None  # the compile's bind made none
    owners = [path.rpartition(".")[0] for path, *_ in holders._sources.rows()]
    assert owners and sorted(set(owners)) == [f"layers.{i}" for i in range(6)]
    hops = holders.source_hops()
    assert hops == path_prefixes(owners) == {"layers", *owners}
    assert holders.source_hops() is hops  # kept
    plan.run()
    assert holders.source_hops() is hops  # a run binds nothing again


def test_a_bind_drops_the_hops_made_for_the_last() -> None:
    model = scaling_model(4)
    with stamping(True):
        plan = compile_plan(model, [scaling_spec()])
    plan.holders._source_hops = frozenset({"stale"})  # made for other sources
    plan.bind_tensors()  # a rebind reads the sources again
    assert plan.holders._source_hops is None
    assert plan.holders.source_hops() == {"layers", *(f"layers.{i}" for i in range(4))}
