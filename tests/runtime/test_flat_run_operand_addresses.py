"""A flat run's operands' data addresses, taken from the layout book's noted ones.

The startup record reads every source's ``data_ptr()`` and the book notes a source column's
storage addresses (``ColumnLayouts.note_read_addresses``); where every row is at offset 0 of
its storage those are its ``data_ptr()`` too, and the book keeps that fact
(``ColumnLayouts.data_addresses``). Codegen's flat run (``codegen._emit_run``) then spans its
operands (``flat.span_of_run(a + b, ...)``) from those addresses, cut per chunk, instead of
reading each operand's ``data_ptr()`` again. The oracle is that read, tensor by tensor; the
plan compiled so is the one compiled with every operand read. Canaries: sources at an offset
of a packed buffer (no data address kept: each read), and the addresses' order (first
operands, then second).
"""

from __future__ import annotations

from typing import Any

import pytest
import torch
from torch import nn

from derivgraph import compile_plan
from derivgraph.column_layout import ColumnLayout, ColumnLayouts
from derivgraph.compiler import flat
from derivgraph.compiler.stamp import stamping
from derivgraph.tools.bench_scaling import scaling_model, scaling_spec
from tests.runtime.test_noted_source_addresses import _packed_model

LAYERS = 80  # past flat.MIN_GROUP, and past flat.MAX_ELEMENTS' chunks with BIG
BIG = 5000


def _model(packed: bool, layers: int = LAYERS) -> nn.Module:
    torch.manual_seed(0)
    return _packed_model(layers) if packed else scaling_model(layers)


def _compile(model: nn.Module) -> Any:
    with stamping(True):
        return compile_plan(model, [scaling_spec()])


def _spans(monkeypatch: pytest.MonkeyPatch) -> list[tuple[list[Any], list[int] | None]]:
    """Every (tensors, starts given) ``flat.span_of_run`` is asked during a compile."""
    asked: list[tuple[list[Any], list[int] | None]] = []
    real = flat.span_of_run

    def spy(tensors: Any, dtype: Any, shape: Any, starts: Any = None) -> Any:
        asked.append((list(tensors), None if starts is None else list(starts)))
        return real(tensors, dtype, shape, starts)

    monkeypatch.setattr(flat, "span_of_run", spy)
    return asked


def _derived(plan: Any) -> dict[str, torch.Tensor]:
    return {n: e.storage.clone() for n, e in plan.entries.by_id.items()
            if isinstance(e.storage, torch.Tensor)}


@pytest.mark.parametrize("layers", [LAYERS, BIG], ids=["one-run", "chunked"])
def test_the_operands_are_spanned_at_their_data_addresses(
        layers: int, monkeypatch: pytest.MonkeyPatch) -> None:
    asked = _spans(monkeypatch)
    model = _model(False, layers)
    _compile(model)
    sources = {id(t) for layer in model.layers for t in (layer.scale, layer.weight)}
    given = [(tensors, starts) for tensors, starts in asked
             if starts is not None and any(id(t) in sources for t in tensors)]
    assert given  # the operand runs took the book's addresses
    for tensors, starts in given:
        assert starts == [t.data_ptr() for t in tensors]  # the oracle: each one's read
    if layers == BIG:  # chunks: each cut of the noted addresses, in order
        assert len(given) > 2


def test_a_packed_column_is_read_per_tensor(monkeypatch: pytest.MonkeyPatch) -> None:
    """Canary: ``weight`` rows 8 elements into their storage; the book's addresses are their
    storages' (not their ``data_ptr()``), so no operand run over them takes them."""
    asked = _spans(monkeypatch)
    model = _model(True)
    _compile(model)
    weights = {id(layer.weight) for layer in model.layers}
    for tensors, starts in asked:
        if starts is not None:
            assert starts == [t.data_ptr() for t in tensors]
            assert not any(id(t) in weights for t in tensors)


@pytest.mark.parametrize("packed", [False, True], ids=["apart", "packed"])
def test_the_plan_is_the_one_compiled_with_every_operand_read(
        packed: bool, monkeypatch: pytest.MonkeyPatch, layers: int = LAYERS) -> None:
    noted_model = _model(packed, layers)
    noted = _compile(noted_model)
    noted_values = _derived(noted)
    with monkeypatch.context() as m:
        m.setattr(ColumnLayouts, "data_addresses", lambda self, tensors: None)
        plain = _compile(_model(packed, layers))
    assert noted.source() == plain.source()
    plain_values = _derived(plain)
    assert noted_values.keys() == plain_values.keys()
    for name, value in noted_values.items():
        assert torch.equal(value, plain_values[name]), name
    with torch.no_grad():  # the sources changed: a refill reads them at those addresses
        for layer in noted_model.layers:
            layer.scale.mul_(3.0)
            layer.weight.add_(0.5)
    noted.refill()
    eager = _compile(noted_model)
    for name, value in _derived(eager).items():
        assert torch.equal(noted.entries.by_id[name].storage, value), name


def test_data_addresses_are_kept_only_at_offset_zero() -> None:
    def book(tensors: list[Any]) -> ColumnLayouts:
        first = tensors[0]
        out = ColumnLayouts()
        out.add(tensors, ColumnLayout(type(first), first.dtype, first.shape, first.device,
                                      True), source=True)
        out.note_read_addresses(tensors, [t.data_ptr() for t in tensors])
        return out

    apart = [torch.arange(4.0) + i for i in range(5)]
    assert book(apart).data_addresses(apart) == [t.data_ptr() for t in apart]
    assert book(apart).data_addresses(apart[1:]) is None  # not the noted column
    offset = [torch.arange(8.0)[3:7] for _ in range(5)]
    noted = book(offset)
    assert noted.addresses(offset) == [t.untyped_storage().data_ptr() for t in offset]
    assert noted.data_addresses(offset) is None  # (its storages', not its data_ptr())
    entries = ColumnLayouts()  # an entry column: each at offset 0 (note_addresses)
    rows = [torch.zeros(3) for _ in range(4)]
    entries.note_addresses(rows, [t.data_ptr() for t in rows])
    assert entries.data_addresses(rows) == [t.data_ptr() for t in rows]
