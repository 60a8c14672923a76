"""entry73: an alias column taken from adoption's record keeps the storages
:func:`~derivgraph.runtime.entry_columns._from_adoption` proved it with: since rowentry80 the
record's own (``ProvenColumn.storages``: what adoption made the entries holding; no row
entry's ``storage`` read), else each row entry's, read once; a column made without them
reads its entries'."""

from __future__ import annotations

import operator
from typing import Any

import pytest
import torch

from derivgraph.compiler.owners import PathReader
from derivgraph.runtime import entry_columns
from derivgraph.runtime.entry import Entry
from derivgraph.runtime.entry_columns import AliasColumn
from tests.runtime.conftest import at_entry_columns


def _counting_storage(monkeypatch: pytest.MonkeyPatch, entries: list[Entry]) -> list[int]:
    """Count every read of ``entries``' ``storage`` from now on (until ``monkeypatch`` undoes
    it)."""
    reads, counted = [0], set(map(id, entries))
    member = Entry.__dict__["storage"]

    def get(self: Entry) -> Any:
        reads[0] += id(self) in counted
        return member.__get__(self, type(self))

    monkeypatch.setattr(Entry, "storage", property(get, member.__set__))
    return reads


def test_an_adopted_alias_column_reads_each_rows_storage_once(
        monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[Any] = []

    def check(tables: Any, planned: Any, owners: PathReader, proven: list[Any]) -> None:
        record = next(p for p in proven if p.template.endswith(".scale_alias"))
        assert len(record.entries) == 5
        want = [e.storage for e in record.entries]
        assert all(isinstance(s, torch.Tensor) for s in want)
        reads = _counting_storage(monkeypatch, record.entries)
        got = entry_columns.entry_columns(tables, planned, owners, proven)
        monkeypatch.undo()
        alias = next(c for c in got if type(c) is AliasColumn)
        assert alias.entries is record.entries
        assert len(alias.storages) == len(want)
        assert all(got_s is want_s for got_s, want_s in zip(alias.storages, want))
        # none read: the storages adoption made the entries holding (the record's) are taken
        assert reads[0] == 0 and all(map(operator.is_, alias.storages, record.storages))
        seen.append(True)

    at_entry_columns(monkeypatch, check)
    assert seen


def test_an_alias_column_made_without_storages_reads_its_entries() -> None:
    a, b = torch.zeros(2), torch.ones(3)
    entries = [object.__new__(Entry), object.__new__(Entry)]
    entries[0].storage, entries[1].storage = a, b
    column = AliasColumn("t", "x", ["r0", "r1"], entries, [None, None])  # type: ignore[arg-type]
    assert len(column.storages) == 2 and column.storages[0] is a and column.storages[1] is b
    given = [b, a]
    taken = AliasColumn("t", "x", ["r0", "r1"], entries, [None, None],  # type: ignore[arg-type]
                        storages=given)
    assert taken.storages is given


def test_canary_an_alias_record_with_a_meta_storage_is_not_taken(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Canary: the storages handed on are the ones the proof read; a row holding a meta
    tensor fails that proof, so no column is made from the record."""
    seen: list[Any] = []

    def check(tables: Any, planned: Any, owners: PathReader, proven: list[Any]) -> None:
        record = next(p for p in proven if p.template.endswith(".scale_alias"))
        first = planned[record.template]
        column = entry_columns._from_adoption(record, first, planned)
        assert type(column) is AliasColumn and len(column.storages) == 5
        kept = record.storages[3]
        record.storages[3] = torch.empty(8, device="meta")  # the storage it was made holding
        try:
            assert entry_columns._from_adoption(record, first, planned) is None
        finally:
            record.storages[3] = kept
        # a record without its storages reads each row's entry: the same proof
        bare = record._replace(storages=None)
        assert type(entry_columns._from_adoption(bare, first, planned)) is AliasColumn
        row = record.entries[3]
        row.storage = torch.empty(8, device="meta")
        try:
            assert entry_columns._from_adoption(bare, first, planned) is None
        finally:
            row.storage = kept
        seen.append(True)

    at_entry_columns(monkeypatch, check)
    assert seen
