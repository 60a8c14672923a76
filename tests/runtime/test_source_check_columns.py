"""The sources' check reads its columns off the bound sources.

:meth:`~derivgraph.runtime.holders.Holders.sources_intact` makes, once per bind, the columns
its sweeps read from the bound sources' columns
(:class:`~derivgraph.runtime.holders.BoundSources`: paths, holder dicts, keys, tensors, bound
pointers; no per-source record): each source's holder dict and key, its tensor and its bound
pointer (the address check). They must be the bound sources' own, in order; a source held
outside a dict (its holder dict None) leaves the check False. Canaries:
``benchmarks/results/prepare61/NOTES.md``, ``benchmarks/results/sources77/NOTES.md``.
"""

from __future__ import annotations

from typing import Any

import torch

from derivgraph.compiler.stamp import stamping
from derivgraph.planner import compile_plan
from derivgraph.tools.bench_scaling import scaling_model, scaling_spec


def _compiled(layers: int = 12) -> Any:
    with stamping(True):
        return compile_plan(scaling_model(layers), [scaling_spec()])


def test_the_check_columns_are_the_bound_sources_columns() -> None:
    plan = _compiled()
    holders = plan.holders
    holders._source_checks = None
    assert holders.sources_intact()
    dicts, keys, at = holders._source_checks
    sources = holders._sources
    assert len(sources.paths) == 2 * 12
    assert sources.paths == list(plan.tensors.sources)
    assert all(d is w for d, w in zip(dicts, sources.dicts, strict=True))
    assert keys == sources.keys == [p.rpartition(".")[2] for p in sources.paths]
    assert all(t is tensor for t, tensor in zip(at.tensors, sources.tensors, strict=True))
    assert all(t is plan.tensors.sources[p] for p, t in zip(sources.paths, at.tensors,
                                                            strict=True))
    assert at.ptrs == sources.ptrs
    assert at.ptrs == [t.data_ptr() for t in at.tensors]
    assert all(d[k] is t for d, k, t in zip(dicts, keys, at.tensors, strict=True))
    layer = holders.model.layers[3]  # each row's holder dict is its owner's registry
    assert dicts[sources.paths.index("layers.3.weight")] is layer._parameters


def test_no_per_source_record_is_kept() -> None:
    plan = _compiled()
    sources = plan.holders._sources
    assert all(type(column) is list for column in sources)
    assert not any(type(d) is tuple for d in sources.dicts)


def test_a_moved_source_fails_the_check_built_from_the_columns() -> None:
    plan = _compiled()
    holders = plan.holders
    holders._source_checks = None
    weight = holders.model.layers[3].weight
    weight.data = torch.zeros_like(weight)  # the same object at another address
    assert not holders.sources_intact()


def test_a_source_held_outside_a_dict_leaves_the_check_false() -> None:
    plan = _compiled()
    holders = plan.holders
    dicts = list(holders._sources.dicts)
    dicts[5] = None
    holders._sources = holders._sources._replace(dicts=dicts)
    holders._source_checks = None
    assert not holders.sources_intact()
    assert holders._source_checks is None


def test_changed_sources_reads_each_row_of_the_columns() -> None:
    plan = _compiled()
    holders, graph = plan.holders, plan.graph
    assert holders.changed_sources(graph) == ([], [])
    layer = holders.model.layers[4]
    with torch.no_grad():
        layer.weight.data = layer.weight.data.clone()  # the same object at another address
    layer.scale = torch.nn.Parameter(layer.scale.detach().clone())  # another object
    assert holders.changed_sources(graph) == ([], ["layers.4.scale", "layers.4.weight"]) \
        or holders.changed_sources(graph) == ([], ["layers.4.weight", "layers.4.scale"])
    shrunk = holders.model.layers[7]
    shrunk.weight = torch.nn.Parameter(shrunk.weight.detach()[:-1].clone())  # another shape
    changed, moved = holders.changed_sources(graph)
    assert changed == ["layers.7.weight"] and sorted(moved) == ["layers.4.scale",
                                                                "layers.4.weight"]


def test_the_walk_takes_every_bound_source_owner() -> None:
    plan = _compiled()
    holders = plan.holders
    hops = holders.walk(entry_paths=[])  # the sources' owners only, read from the columns
    owners = {path.rpartition(".")[0] for path in holders._sources.paths}
    assert owners == {f"layers.{i}" for i in range(12)}
    assert all(hops.objects[o] is holders.model.get_submodule(o) for o in owners)
