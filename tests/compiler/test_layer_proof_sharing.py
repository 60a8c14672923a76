"""The lowering's layer proof (``lower_layers.provable_layers``) on storage a template shares.

The scaling template's alias holds its source's very tensor: every row whose alias holds its
own source's tensor shares that storage as the template does, proven without reading the
addresses again. A row whose alias holds another tensor is read: over the same storage (a view)
it still shares it and is proven; with storage of its own it does not, and only that row is
left to the per-node lowering. Canary: a position skipped whenever the template shares it, not
only where it holds the very tensors.
"""

from __future__ import annotations

from typing import Any

import pytest
import torch

from derivgraph import compile_plan
from derivgraph.compiler.lower_layers import provable_layers
from derivgraph.compiler.stamp import stamping
from derivgraph.tools.bench_scaling import scaling_model, scaling_spec

LAYERS = 12
ROW = "layers.4"


def _proven_rows(swap: Any) -> tuple[list[str], int]:
    """The layers the proof keeps after ``swap(tensor)`` replaced ``ROW``'s alias's bound
    tensor, and how many rows the table has."""
    torch.manual_seed(0)
    with stamping(True):
        plan = compile_plan(scaling_model(LAYERS), [scaling_spec()])
    entry = plan.entries.by_id[f"{ROW}.scale_alias"]
    if swap is not None:
        entry.storage = swap(entry.storage)
    (table,) = provable_layers(plan.tensors)
    rows = [row[0].rpartition(".")[0] for row in table.rows]
    return rows, LAYERS - 1


def _param(t: torch.Tensor) -> torch.nn.Parameter:
    return torch.nn.Parameter(t, requires_grad=False)  # the source's type, as the template's


@pytest.mark.parametrize("swap, kept", [
    (None, True),                                     # the very tensor: not read again
    (lambda t: _param(t.detach()), True),            # another tensor, the same storage
    (lambda t: _param(t.detach().clone()), False),    # storage of its own: that row is left
])
def test_a_row_shares_storage_as_its_template_does(swap: Any, kept: bool) -> None:
    rows, n = _proven_rows(swap)
    assert (ROW in rows) is kept
    assert len(rows) == (n if kept else n - 1)


def test_a_node_every_row_shares_is_read_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """The template's shared constant (``full``'s value) is one value in every row: its facts
    are asked of that one value, the rows' own columns of all of theirs."""
    from derivgraph.column_layout import ColumnFacts
    from derivgraph.compiler import lower_layers

    asked: list[list[Any]] = []

    class Asked(ColumnFacts):
        def __init__(self, values: Any, *args: Any) -> None:
            super().__init__(values, *args)
            asked.append(list(values))

    torch.manual_seed(0)
    with stamping(True):
        plan = compile_plan(scaling_model(LAYERS), [scaling_spec()])
    monkeypatch.setattr(lower_layers, "ColumnFacts", Asked)
    (table,) = provable_layers(plan.tensors)
    assert len(table.rows) == LAYERS - 1
    shared = [values for values in asked if len(values) == 1]
    assert [type(v[0]) for v in shared] == [torch.Tensor]  # full's value, asked once
    assert all(len(values) == LAYERS - 1 for values in asked if len(values) != 1)
