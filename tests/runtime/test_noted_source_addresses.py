"""A source column's storage addresses, taken from the startup record's read of the sources.

``planner._record_startup`` reads every source's ``data_ptr()``; the layout book records each
stamped source column the build proved (``planner._record_sources``). Where the record proves
what that address is (a plain tensor or parameter off the meta device, not empty), the book
notes the column's storage addresses: ``data_ptr()`` less ``storage_offset()`` elements
(``ColumnLayouts.note_read_addresses``), and the lowering's layer proof
(``lower_layers.column_addresses``) takes them instead of reading
``untyped_storage().data_ptr()`` of every row again. The oracle is that read, row by row; the
plan compiled with the noted addresses is the one compiled without them. Canaries: sources at
an offset of a packed buffer (the offset taken off), and every refusal (empty, a tensor
subclass, meta, a tensor the caller did not read).
"""

from __future__ import annotations

import operator
from typing import Any

import pytest
import torch
from torch import nn

from derivgraph import compile_plan
from derivgraph.column_layout import ColumnLayout, ColumnLayouts
from derivgraph.compiler.stamp import stamping
from derivgraph.tools.bench_scaling import scaling_model, scaling_spec

LAYERS = 12


def _storage_addresses(tensors: list[Any]) -> list[int]:
    return [t.untyped_storage().data_ptr() for t in tensors]


def _packed_model(layers: int = LAYERS) -> nn.Module:
    """The scaling model with each layer's ``scale`` and ``weight`` views of one buffer (as an
    engine packs a layer's weights): ``weight`` at an offset of 8 elements, sharing ``scale``'s
    storage."""
    model = scaling_model(layers)
    for layer in model.layers:
        packed = torch.cat([layer.scale.detach(), layer.weight.detach()])
        layer.scale = nn.Parameter(packed[:8], requires_grad=False)
        layer.weight = nn.Parameter(packed[8:], requires_grad=False)
    return model


def _compile(model: nn.Module) -> Any:
    with stamping(True):
        return compile_plan(model, [scaling_spec()])


def _answers(monkeypatch: pytest.MonkeyPatch) -> list[tuple[list[Any], list[int]]]:
    """Every (tensors, addresses) the book answers during a compile."""
    answered: list[tuple[list[Any], list[int]]] = []
    real = ColumnLayouts.addresses

    def spy(self: ColumnLayouts, tensors: Any) -> Any:
        got = real(self, tensors)
        if got is not None:
            answered.append((list(tensors), list(got)))
        return got

    monkeypatch.setattr(ColumnLayouts, "addresses", spy)
    return answered


def _source_columns(model: nn.Module) -> dict[str, list[Any]]:
    rows = list(model.layers)[1:]  # the template's layer is read apart
    return {name: [getattr(layer, name) for layer in rows] for name in ("scale", "weight")}


@pytest.mark.parametrize("packed", [False, True], ids=["apart", "packed"])
def test_the_source_columns_are_answered_at_their_storages_addresses(
        packed: bool, monkeypatch: pytest.MonkeyPatch) -> None:
    torch.manual_seed(0)
    model = _packed_model() if packed else scaling_model(LAYERS)
    answered = _answers(monkeypatch)
    _compile(model)
    for tensors, ptrs in answered:
        assert ptrs == _storage_addresses(tensors)  # the oracle: the untyped storage's
    sources = _source_columns(model)
    for name, tensors in sources.items():  # each source column answered by the book
        assert any(len(got) == len(tensors) and all(map(operator.is_, got, tensors))
                   for got, _ in answered), name
    weights = sources["weight"]
    if packed:  # the weight column is at an offset: its data_ptr is not its storage's
        assert all(w.storage_offset() == 8 for w in weights)
        assert _storage_addresses(weights) == _storage_addresses(sources["scale"])
        assert [w.data_ptr() for w in weights] != _storage_addresses(weights)


@pytest.mark.parametrize("packed", [False, True], ids=["apart", "packed"])
def test_the_plan_is_the_one_compiled_without_noted_source_addresses(
        packed: bool, monkeypatch: pytest.MonkeyPatch) -> None:
    def model() -> nn.Module:
        torch.manual_seed(0)
        return _packed_model(40) if packed else scaling_model(40)

    noted = _compile(model())
    monkeypatch.setattr(ColumnLayouts, "note_read_addresses",
                        lambda self, tensors, ptrs, runs=None: None)
    plain = _compile(model())
    assert noted.source() == plain.source()
    assert noted.programs.written() == plain.programs.written()


def _book(tensors: list[Any], layout: ColumnLayout | None = None) -> ColumnLayouts:
    """A book recording ``tensors`` as one column (the build's proof), noted from their
    ``data_ptr()`` as the startup record reads them."""
    first = tensors[0]
    book = ColumnLayouts()
    book.add(tensors, layout or ColumnLayout(type(first), first.dtype, first.shape,
                                             first.device, True), source=True)
    book.note_read_addresses(tensors, [t.data_ptr() for t in tensors])
    return book


def test_an_offset_is_taken_off_the_data_pointer() -> None:
    """Canary: each row 3 elements into its storage (the address ``data_ptr()`` less 12
    bytes; red if the offset is not taken off)."""
    tensors = [torch.arange(8, dtype=torch.float32)[3:7] for _ in range(5)]
    assert _book(tensors).addresses(tensors) == _storage_addresses(tensors)
    halves = [torch.zeros(6, dtype=torch.float16)[1:4] for _ in range(3)]  # 2 bytes each
    assert _book(halves).addresses(halves) == _storage_addresses(halves)


def test_an_empty_column_is_not_noted() -> None:
    """Canary: an empty view's ``data_ptr()`` is 0 while its storage has an address."""
    tensors = [torch.arange(8.0)[5:5] for _ in range(3)]
    assert [t.data_ptr() for t in tensors] == [0, 0, 0]
    assert all(_storage_addresses(tensors))
    assert _book(tensors).addresses(tensors) is None


class _Wrapped(torch.Tensor):
    """A tensor subclass (its own ``data_ptr`` could answer anything)."""


def test_a_tensor_subclass_or_meta_column_is_not_noted() -> None:
    wrapped = [torch.zeros(4).as_subclass(_Wrapped) for _ in range(3)]
    assert _book(wrapped).addresses(wrapped) is None  # canary: not a plain tensor
    meta = [torch.empty(4, device="meta") for _ in range(3)]
    book = ColumnLayouts()
    book.add(meta, ColumnLayout(torch.Tensor, torch.float32, torch.Size([4]),
                                torch.device("meta"), True), source=True)
    book.note_read_addresses(meta, [0] * len(meta))
    assert book.addresses(meta) is None  # canary: off the meta device only


def _recorded(tensors: list[Any], source: bool = True) -> ColumnLayouts:
    book = ColumnLayouts()
    book.add(tensors, ColumnLayout(torch.Tensor, torch.float32, torch.Size([4]),
                                   torch.device("cpu"), True), source=source)
    return book


def test_a_column_is_found_as_a_run_of_the_read_tensors() -> None:
    """The startup record reads every source, layer by layer: a column is every k-th."""
    column = [torch.zeros(4) for _ in range(4)]
    others = [torch.ones(4) for _ in range(9)]
    read = [others[0]]
    for i, c in enumerate(column):  # each layer: the column's tensor, then two others
        read += [c, *others[1 + 2 * i:3 + 2 * i]]
    assert [i for i, t in enumerate(read) if any(t is c for c in column)] == [1, 4, 7, 10]
    ptrs = [t.data_ptr() for t in read]
    book = _recorded(column)
    book.note_read_addresses(read, ptrs)
    assert book.addresses(column) == _storage_addresses(column)
    one = [torch.zeros(4)]
    book = _recorded(one)
    book.note_read_addresses([torch.ones(4), *one], [0, one[0].data_ptr()])
    assert book.addresses(one) == _storage_addresses(one)


def test_a_column_not_a_run_of_the_read_tensors_is_not_noted() -> None:
    tensors = [torch.zeros(4) for _ in range(4)]
    ptrs = [t.data_ptr() for t in tensors]
    cases = [
        (tensors[:3], ptrs[:3]),  # the last not read
        (tensors[1:], ptrs[1:]),  # the first not read
        ([tensors[0], tensors[2], tensors[1], tensors[3]], ptrs),  # another order
        ([tensors[0], tensors[1], torch.zeros(4), tensors[2], tensors[3]], ptrs),  # no one step
        ([t.clone() for t in tensors], ptrs),  # equal values, not them
    ]
    for read, read_ptrs in cases:
        book = _recorded(tensors)
        book.note_read_addresses(read, read_ptrs)
        assert book.addresses(tensors) is None
    book = _recorded(tensors, source=False)  # canary: only the build's source columns
    book.note_read_addresses(tensors, ptrs)
    assert book.addresses(tensors) is None
    book = _recorded(tensors)
    book.note_read_addresses(tensors, ptrs)
    assert book.addresses(tensors) == _storage_addresses(tensors)


def test_a_noted_column_keeps_its_first_note() -> None:
    tensors = [torch.zeros(4) for _ in range(3)]
    book = _book(tensors)
    book.note_read_addresses(tensors, [64] * len(tensors))  # a later read: not taken
    assert book.addresses(tensors) == _storage_addresses(tensors)
