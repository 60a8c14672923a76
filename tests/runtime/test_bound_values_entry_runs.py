"""``BoundTensors.bound_values`` over a run starting at an entry: no sweep of the sources.

``bound`` reads a ref from the sources first, then the entries, views, stages and constants.
An entry's id is a derived node's and a source's a source node's (one graph, one node per id),
so a run the entries bind whole is bound by the entries alone. Oracle: ``bound`` ref by ref
(``missing`` where it raises), on compiled plans' stamped columns and on mixed runs.
"""

from __future__ import annotations

import random
from typing import Any

import pytest
import torch

from derivgraph import compile_plan
from derivgraph.compiler.layers import closed_layers
from derivgraph.compiler.stamp import stamping
from derivgraph.tools.bench_scaling import scaling_model, scaling_spec

_MISSING = object()


def _oracle(tensors: Any, refs: list[str]) -> list[Any]:
    out = []
    for ref in refs:
        try:
            out.append(tensors.bound(ref))
        except KeyError:
            out.append(_MISSING)
    return out


def _same(a: list[Any], b: list[Any]) -> bool:
    return len(a) == len(b) and all(x is y for x, y in zip(a, b))


@pytest.mark.parametrize("stamp", [True, False])
def test_no_entry_is_a_source(stamp: bool) -> None:
    with stamping(stamp):
        plan = compile_plan(scaling_model(5), [scaling_spec()])
    tensors = plan.tensors
    assert tensors.sources and len(tensors.entries)
    assert tensors.sources.keys().isdisjoint(tensors.entries)
    assert not any(ref in plan.graph.derived for ref in tensors.sources)


def test_the_stamped_columns_are_bound_as_ref_by_ref() -> None:
    with stamping(True):
        plan = compile_plan(scaling_model(8), [scaling_spec()])
    tensors = plan.tensors
    tables = closed_layers(plan.graph)
    assert tables
    kinds = set()
    for table in tables:
        for column in zip(*table.rows):
            refs = list(column)
            kinds.add((refs[0] in tensors.entries, refs[0] in tensors.sources))
            assert _same(tensors.bound_values(refs, _MISSING), _oracle(tensors, refs)), refs[0]
    assert kinds == {(True, False), (False, True), (False, False)}  # entries, sources, ops


def test_mixed_runs_are_bound_as_ref_by_ref() -> None:
    with stamping(True):
        plan = compile_plan(scaling_model(6), [scaling_spec()])
    tensors = plan.tensors
    entries, sources = list(tensors.entries), list(tensors.sources)
    others = [n for n in plan.graph.nodes if n not in tensors.entries and n not in tensors.sources]
    pool = entries + sources + others + ["no.such.path"]
    rng = random.Random(0)
    runs = [entries, sources, others, entries + sources, [entries[0], *sources],
            [entries[0], "no.such.path"], [entries[0], *others], [], [sources[0], *entries]]
    runs += [[rng.choice(pool) for _ in range(rng.randint(1, 12))] for _ in range(200)]
    for refs in runs:
        assert _same(tensors.bound_values(refs, _MISSING), _oracle(tensors, refs)), refs[:3]
    assert isinstance(tensors.bound_values(entries)[0], torch.Tensor)
