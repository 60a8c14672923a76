"""An entry column's storage addresses, read once by the compile's startup record.

``EntryColumn.record_startup`` reads every row's ``data_ptr()``; where it keeps the rows'
storages lazily (the layout book's record: plain row-major tensors at offset 0 of their
storage) those are the storages' data addresses, and it notes them in the book
(``ColumnLayouts.note_addresses``). The lowering's layer proof
(``lower_layers.column_addresses``) takes them from there instead of reading
``untyped_storage().data_ptr()`` of every row again. The oracle is that read, row by row.
The book answers only the noted column's very tensors, in order (canaries: a swapped row, a
shorter run, another list of equal tensors), and the plan compiled with the noted addresses is
the one compiled without them.
"""

from __future__ import annotations

from typing import Any

import pytest
import torch

from derivgraph import compile_plan
from derivgraph.column_layout import ColumnLayouts
from derivgraph.compiler import lower_layers
from derivgraph.compiler.stamp import stamping
from derivgraph.runtime.entry_columns import EntryColumn
from derivgraph.tools.bench_scaling import scaling_model, scaling_spec


def _plan(layers: int = 12) -> Any:
    torch.manual_seed(0)
    with stamping(True):
        return compile_plan(scaling_model(layers), [scaling_spec()])


def _storage_addresses(tensors: list[torch.Tensor]) -> list[int]:
    return [t.untyped_storage().data_ptr() for t in tensors]


def _noting(monkeypatch: pytest.MonkeyPatch) \
        -> list[tuple[list[Any], list[int], list[Any] | None]]:
    """Every (tensors, addresses, storages) a compile notes."""
    noted: list[tuple[list[Any], list[int], list[Any] | None]] = []
    real = ColumnLayouts.note_addresses

    def spy(self: ColumnLayouts, tensors: Any, ptrs: list[int],
            storages: list[Any] | None = None) -> None:
        noted.append((list(tensors), list(ptrs), storages))
        real(self, tensors, ptrs, storages)

    monkeypatch.setattr(ColumnLayouts, "note_addresses", spy)
    return noted


def test_the_noted_addresses_are_the_storages_addresses(
        monkeypatch: pytest.MonkeyPatch) -> None:
    noted = _noting(monkeypatch)
    answered: list[int] = []
    real = ColumnLayouts.addresses

    def counting(self: ColumnLayouts, tensors: Any) -> Any:
        got = real(self, tensors)
        if got is not None:
            answered.append(len(got))
        return got

    monkeypatch.setattr(ColumnLayouts, "addresses", counting)
    plan = _plan()
    # the three allocated attribute columns (inv, prod, strides) are noted; no alias column
    names = {c.name for c in plan.entries.columns if isinstance(c, EntryColumn)
             and type(c) is EntryColumn}
    assert names == {"inv", "prod", "strides"} and len(noted) == 3
    for tensors, ptrs, storages in noted:
        assert len(tensors) == 11 and ptrs == _storage_addresses(tensors)
        assert all(t.storage_offset() == 0 for t in tensors)
        assert [s.data_ptr() for s in storages] == ptrs  # the startup record's storages
    # the layer proof took every noted column: the three entry columns, then the sources'
    # (the scale column, read as the alias column's values, and the weight column)
    assert answered == [11, 11, 11, 11, 11]
    for column in plan.entries.columns:
        if type(column) is EntryColumn:
            assert [e.startup_ptr for e in column.entries] == \
                _storage_addresses(column.storages)


def test_the_book_answers_only_the_noted_tensors_in_order() -> None:
    tensors = [torch.zeros(4) for _ in range(5)]
    ptrs = _storage_addresses(tensors)
    book = ColumnLayouts()
    book.note_addresses(tensors, ptrs)
    assert book.addresses(tensors) == ptrs
    assert book.addresses(list(tensors)) == ptrs  # the same tensors in another list
    swapped = [*tensors[:2], torch.zeros(4), *tensors[3:]]
    assert book.addresses(swapped) is None  # canary: a row that is another tensor
    assert book.addresses(tensors[:4]) is None  # canary: a shorter run
    assert book.addresses(tensors[1:]) is None  # not noted from its first tensor
    assert book.addresses([t.clone() for t in tensors]) is None  # equal values, not them
    assert book.addresses([]) is None
    book.note_addresses(tensors, ptrs[:3])  # addresses that do not match the tensors: kept
    assert book.addresses(tensors) == ptrs  # none (the first note stands)


def test_column_addresses_reads_again_where_the_book_refuses(
        monkeypatch: pytest.MonkeyPatch) -> None:
    plan = _plan()
    tensors = plan.tensors
    column = next(c for c in plan.entries.columns if c.name == "inv")
    refs = list(column.ids)
    book = ColumnLayouts()
    wrong = [p + 64 for p in _storage_addresses(column.storages)]
    book.note_addresses(column.storages, wrong)  # a note the reader must take as it is
    tensors.layouts = book
    try:
        assert lower_layers.column_addresses(tensors, refs) == wrong  # taken from the note
        tensors.layouts = book  # dropped the kept answer; now the note is refused
        monkeypatch.setattr(ColumnLayouts, "addresses", lambda self, t: None)
        assert lower_layers.column_addresses(tensors, refs) == \
            _storage_addresses(column.storages)
    finally:
        tensors.layouts = None


def test_the_plan_is_the_one_compiled_without_noted_addresses(
        monkeypatch: pytest.MonkeyPatch) -> None:
    noted = _plan(40)
    monkeypatch.setattr(ColumnLayouts, "addresses", lambda self, tensors: None)
    plain = _plan(40)
    assert noted.source() == plain.source()
    assert noted.programs.written() == plain.programs.written()
    assert [type(t).__name__ for t in noted.entries.columns] == \
        [type(t).__name__ for t in plain.entries.columns]
