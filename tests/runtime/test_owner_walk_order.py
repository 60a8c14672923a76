"""The owner walk (:class:`~derivgraph.runtime.accessors.HopTable`) resolves a run of hops under
one parent (a layer list's layers) by slices, the hops of several parents by sweeps per parent.
Each table is compared, field by field, with the one the hop-at-a-time walk (the oracle below:
each hop ``_add``-ed in order, the definition ``_add_run`` keeps) builds."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest
from torch import nn

from derivgraph.runtime.accessors import HopTable


class _OneByOne(HopTable):
    """The oracle: each hop of a run added alone, in order."""

    def _add_run(self, run: list[tuple[str, str, str]]) -> None:  # hop by hop, in order
        for hop in run:
            self._add(*hop)


def _fields(table: HopTable) -> tuple[Any, ...]:
    return (list(table.objects), [id(o) for o in table.objects.values()], table.prefixes,
            table.parts, table.parents, table.children, [id(d) for d in table.dicts],
            table.keys, [id(e) for e in table.expected], table.slow)


def _model() -> nn.Module:
    root = nn.Module()
    root.layers = nn.ModuleList(nn.Module() for _ in range(80))
    for i, layer in enumerate(root.layers):
        layer.mlp = nn.Module()
        layer.mlp.proj = nn.Module()
        if i % 7 == 0:
            layer.plain = SimpleNamespace(inner=SimpleNamespace())  # objects' __dict__ hops
    root.extra = nn.ModuleDict({"a": nn.Module(), "b": nn.Module()})
    return root


def _orders() -> dict[str, list[str]]:
    layers = [f"layers.{i}" for i in range(80)]
    mlps = [f"layers.{i}.mlp" for i in range(80)]
    return {
        "layers": layers,
        "layers then mlps": layers + mlps,
        "mlps then layers": mlps + layers,  # every layer a prefix walked before
        "interleaved": [p for i in range(80) for p in (f"layers.{i}", f"layers.{i}.mlp")],
        "deep first, mid chunk": layers[:40] + ["layers.3.mlp.proj"] + layers[40:] + mlps,
        "breaks past a chunk": layers[:33] + ["extra.a"] + layers[33:70] + ["extra.b"]
        + [f"layers.{i}.mlp.proj" for i in range(0, 80, 3)] + layers[70:],
        "missing and plain": layers[:10] + ["layers.0.plain", "layers.0.plain.inner",
                                            "layers.1.plain", "layers.9.nothing.deeper"]
        + [f"layers.{i}.plain" for i in range(0, 80, 7)] + ["nothing", "nothing.at.all"],
        "repeats": layers[:5] * 3 + mlps[:5] * 2 + layers,
        "the root's children": ["layers", "extra", "extra.a", "layers.5", "extra.b"],
    }


@pytest.mark.parametrize("order", list(_orders()))
def test_the_walk_equals_the_path_at_a_time_walk(order: str) -> None:
    model = _model()
    paths = _orders()[order]
    assert _fields(HopTable(model, paths)) == _fields(_OneByOne(model, paths))


def test_a_run_under_one_parent_is_checked_and_refreshed_as_before() -> None:
    """The hops resolved by slices are checked by the sweep, and a rebuilt layer is walked
    again with what is under it."""
    model = _model()
    paths = [f"layers.{i}.mlp" for i in range(80)]
    table = HopTable(model, paths)
    assert table.intact() and table.refresh() == []
    model.layers[5] = nn.Module()
    model.layers[5].mlp = nn.Module()
    assert not table.intact()
    assert table.refresh() == ["layers.5", "layers.5.mlp"]
    assert table.objects["layers.5.mlp"] is model.layers[5].mlp and table.intact()


@pytest.mark.parametrize("order", list(_orders()))
def test_children_are_the_hops_by_parent(order: str) -> None:
    """``children`` maps each prefix some hop starts from to those hops' indices, in order,
    and holds nothing for a prefix no hop starts from (a leaf owner: ``refresh`` reads it as
    no hops)."""
    table = HopTable(_model(), _orders()[order])
    by_parent: dict[str, list[int]] = {}
    for index, parent in enumerate(table.parents):
        by_parent.setdefault(parent, []).append(index)
    assert table.children == by_parent


def test_a_rebuilt_leaf_owner_is_walked_again_alone() -> None:
    model = _model()
    table = HopTable(model, [f"layers.{i}.mlp.proj" for i in range(80)])
    model.layers[7].mlp.proj = nn.Module()
    assert table.refresh() == ["layers.7.mlp.proj"]
    assert table.objects["layers.7.mlp.proj"] is model.layers[7].mlp.proj and table.intact()
