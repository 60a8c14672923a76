"""Adoption decides the column rows by column and only the other rows one by one,
and plans every row at its place in graph order, as the per-row loop did."""

from __future__ import annotations

from typing import Any

import pytest
import torch

from derivgraph.compiler.stamp import stamping
from derivgraph.tools.bench_scaling import scaling_model
from tests.compiler.scaling_variants import spec_with_generic_rows

_spec_with_generic_rows = spec_with_generic_rows


def _facts(planned: list[tuple[Any, Any]]) -> dict[str, tuple[Any, ...]]:
    """Per planned row: its slot, whether adopted, how it gets storage (an alias: of what),
    and whether it holds storage yet."""
    return {e.node.id: (e.slot, e.adopted, type(x).__name__, getattr(x, "target", None),
                        e.storage is None) for e, x in planned}


def test_adoption_plans_every_row_in_graph_order() -> None:
    from derivgraph.adoption import AliasOf
    from derivgraph.planner import _prepare

    model = scaling_model(12)
    with stamping(True):
        plan, values, planned, _ = _prepare(model, [_spec_with_generic_rows()], False, True)
    graph = plan.graph
    assert [e.node.id for e, _ in planned] == \
        [n for n in graph.ordered() if n in graph.derived]
    assert any(isinstance(x, AliasOf) and x.target.endswith(".inv")
               for _, x in planned)  # rows decided one by one, between the column rows
    for entry, extra in planned:  # an alias holds its target's value (that object)
        if isinstance(extra, AliasOf):
            assert entry.storage is values[extra.target]
    with stamping(False):  # no column: every row decided one by one (the reference)
        _, _, plain, _ = _prepare(model, [_spec_with_generic_rows()], False, True)
    assert _facts(planned) == _facts(plain)


def test_a_row_with_an_issue_fails_adoption_as_one_by_one() -> None:
    from derivgraph.errors import AdoptionError
    from derivgraph.planner import _prepare

    model = scaling_model(12)
    model.layers[5].twice = torch.zeros(8)  # the engine holds another value there
    got = []
    for on in (True, False):
        with stamping(on), pytest.raises(AdoptionError) as info:
            _prepare(model, [_spec_with_generic_rows()], False, True)
        got.append([(i.rule, i.node, i.message) for i in info.value.issues])
    assert got[0] == got[1] and [n for _, n, _ in got[0]] == ["layers.5.twice"]
