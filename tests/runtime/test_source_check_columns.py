"""The sources' check reads its columns off the bound sources.

:meth:`~derivgraph.runtime.holders.Holders.sources_intact` makes, once per bind, the columns
its sweeps read from the bound sources ``(path, where, tensor, pointer)``: each source's holder
dict and key (from ``where``), its tensor and its bound pointer (the address check). They must
be the bound sources' own, in order; a source held outside a dict (``where`` None) leaves the
check False. Canaries: ``benchmarks/results/prepare61/NOTES.md``.
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
    assert len(sources) == 2 * 12
    assert all(d is where[0] for d, (_p, where, _t, _a) in zip(dicts, sources, strict=True))
    assert keys == [where[1] for _p, where, _t, _a in sources]
    assert all(t is tensor for t, (_p, _w, tensor, _a) in zip(at.tensors, sources, strict=True))
    assert at.ptrs == [ptr for *_, ptr in sources]
    assert at.ptrs == [t.data_ptr() for t in at.tensors]
    assert all(d[k] is t for d, k, t in zip(dicts, keys, at.tensors, strict=True))


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
    path, where, tensor, ptr = holders._sources[5]
    holders._sources[5] = (path, None, tensor, ptr)
    holders._source_checks = None
    assert not holders.sources_intact()
    assert holders._source_checks is None
