"""The build's column proof of a source column, taken by the compile's layout book.

The build proves every stamped row's source tensor to have its template's layout (class,
shape, stride, dtype, device: ``stamp_columns.prove_columns``); a column replay keeps each
source column's tensors with that layout (``DerivedGraph.proven_sources``) and the compile
records them in its layout book (``column_layout.proven_layout``: plain tensors with row-major
strides only). The lowering's layer proof then takes the record where the bound sources are
those very tensors (the book's identity sweep), and reads them as before otherwise.
Canaries: the record taken whatever is bound (a swapped source goes unread), and the record
never made.
"""

from __future__ import annotations

from typing import Any

import pytest
import torch
from torch import nn

from derivgraph import compile_plan
from derivgraph import planner as planner_module
from derivgraph.column_layout import ColumnFacts, ColumnLayouts, proven_layout
from derivgraph.compiler import lower as lower_module
from derivgraph.compiler import lower_layers
from derivgraph.compiler.reads import layout
from derivgraph.compiler.stamp import stamping
from derivgraph.tools.bench_scaling import scaling_model, scaling_spec

LAYERS = 12
SWAPPED = 5
_FOLDS = planner_module.compile_folds  # the build's next step, before any source is bound


class _Sub(torch.Tensor):
    """A tensor subclass: its reads may be its own, so no record is proved for it."""


def _strided(shape: tuple[int, ...], stride: tuple[int, ...]) -> torch.Tensor:
    return torch.empty(64).as_strided(shape, stride)


@pytest.mark.parametrize("tensor, recorded", [
    (torch.rand(8), True),
    (nn.Parameter(torch.rand(4, 2), requires_grad=False), True),
    (torch.zeros(3, 0, 2, dtype=torch.int64), True),
    (torch.empty(2, 3, device="meta"), True),
    (torch.rand(4, 2).t(), False),                  # not row-major: not contiguous
    (_strided((1, 8), (3, 1)), False),              # contiguous, other strides: not proved
    (torch.rand(16)[::2], False),
    (torch.rand(8).as_subclass(_Sub), False),       # not a plain tensor
])
def test_a_proven_layout_says_what_the_tensor_reads(tensor: torch.Tensor,
                                                    recorded: bool) -> None:
    record = proven_layout(layout(tensor))
    assert (record is not None) is recorded
    if record is not None:
        facts = ColumnFacts([tensor, tensor])  # read from the values
        assert (record.type, record.dtype, record.shape, record.device, record.contiguous,
                record.is_meta) == (facts.type, facts.dtype, facts.shape, facts.device,
                                    facts.contiguous, facts.is_meta)
        assert type(record.shape) is torch.Size


def _compile(monkeypatch: pytest.MonkeyPatch, swap: Any = None,
             ) -> tuple[Any, nn.Module, list[ColumnLayouts], list[Any], list[ColumnFacts]]:
    """Compile the scaling model (stamped), ``swap(model)`` run after the build (before the
    sources are bound); the plan, the model, the compile's book, the layer proof's tables and
    the facts it asked of each column."""
    books: list[ColumnLayouts] = []
    tables: list[Any] = []
    asked: list[ColumnFacts] = []

    class Kept(ColumnLayouts):
        __slots__ = ()

        def __init__(self) -> None:
            super().__init__()
            books.append(self)

    class Asked(ColumnFacts):
        def __init__(self, *args: Any) -> None:
            super().__init__(*args)
            asked.append(self)

    proof, folds = lower_layers.provable_layers, _FOLDS

    def proving(ctx: Any, *args: Any) -> Any:
        tables.extend(proof(ctx, *args))
        return tables

    def swapping(model: nn.Module, *args: Any) -> Any:
        if swap is not None:
            swap(model)
        return folds(model, *args)

    monkeypatch.setattr(planner_module, "ColumnLayouts", Kept)
    monkeypatch.setattr(planner_module, "compile_folds", swapping)
    monkeypatch.setattr(lower_module, "provable_layers", proving)
    monkeypatch.setattr(lower_layers, "ColumnFacts", Asked)
    torch.manual_seed(0)
    model = scaling_model(LAYERS)
    with stamping(True):
        plan = compile_plan(model, [scaling_spec()])
    assert len(books) == 1
    return plan, model, books, tables, asked


def _rows(tables: list[Any]) -> list[str]:
    (table,) = tables
    return [row[0].rpartition(".")[0] for row in table.rows]


def test_the_compile_records_the_proven_source_columns(monkeypatch: pytest.MonkeyPatch) -> None:
    plan, model, (book,), tables, _ = _compile(monkeypatch)
    assert plan.graph.proven_sources == []  # handed to the book, not kept by the plan
    for name in ("scale", "weight"):
        tensors = [getattr(layer, name) for layer in model.layers[1:]]  # the stamped rows
        record = book.common(tensors)
        assert record is not None and record.contiguous is True
        for tensor in tensors:
            assert (type(tensor), tensor.dtype, tensor.shape, tensor.device,
                    tensor.is_contiguous()) == \
                (record.type, record.dtype, record.shape, record.device, record.contiguous)
    assert _rows(tables) == [f"layers.{i}" for i in range(1, LAYERS)]


def test_the_layer_proof_takes_the_sources_record(monkeypatch: pytest.MonkeyPatch) -> None:
    _, model, _, _, asked = _compile(monkeypatch)
    sources = {id(t) for layer in model.layers for t in (layer.scale, layer.weight)}
    on_sources = [facts for facts in asked if id(facts.values[0]) in sources]
    assert len(on_sources) == 3  # the alias's column (the scales), the scales', the weights'
    assert all(facts.record is not None for facts in on_sources)


def _non_contiguous(model: nn.Module) -> None:
    """Layer ``SWAPPED``'s weight replaced by a strided tensor of the same values."""
    layer = model.layers[SWAPPED]
    held = torch.empty(2 * layer.weight.numel())[::2]
    held.copy_(layer.weight)
    layer.weight = nn.Parameter(held, requires_grad=False)


def _same_layout(model: nn.Module) -> None:
    """Layer ``SWAPPED``'s weight replaced by a copy (another tensor, the same facts)."""
    layer = model.layers[SWAPPED]
    layer.weight = nn.Parameter(layer.weight.detach().clone(), requires_grad=False)


@pytest.mark.parametrize("swap, kept", [(_non_contiguous, False), (_same_layout, True)])
def test_a_source_swapped_after_the_build_is_read(monkeypatch: pytest.MonkeyPatch, swap: Any,
                                                  kept: bool) -> None:
    plan, model, _, tables, _ = _compile(monkeypatch, swap)
    rows = _rows(tables)
    assert (f"layers.{SWAPPED}" in rows) is kept
    assert len(rows) == LAYERS - 1 - (not kept)
    assert plan.tensors.bound(f"layers.{SWAPPED}.weight") is model.layers[SWAPPED].weight
    for k, layer in enumerate(model.layers):  # the lowered pass computed from the new weight
        assert torch.equal(layer.prod, layer.scale * layer.weight), k
    # today's check (no record of the sources) keeps the same rows
    monkeypatch.setattr(planner_module, "_record_sources", lambda book, graph: None)
    assert _rows(_compile(monkeypatch, swap)[3]) == rows
