"""The owner proof of a table's entry columns, shared from one column to the next.

``EntryColumn.bind`` proves every row's owner is the object at its entry's owner path before
it stores anything. The columns of one stamped table have the same owner paths and owners row
by row: a column that has them (``accessors.same_owners``, the rule the holder table already
uses) takes the previous column's proof and ``__dict__`` s instead of walking again. A column
whose owners differ from the previous one's (mis-ordered) is still proven on its own and
refused. Canary: a share check of the paths only lets a later mis-ordered column bind the
wrong layer.
"""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest

from derivgraph.compiler.owners import PathReader
from derivgraph.errors import SourceLocation, SpecValidationError
from derivgraph.runtime.entry_columns import EntryColumn
from tests.compiler.test_entry_columns import _compile_recording
from tests.compiler.test_stamp_reload import LAYERS, _model


class _Counting(PathReader):
    """A reader that counts the columns it is asked to walk."""

    asked = 0

    def owners(self, owner_paths: list[str]) -> list[Any]:
        type(self).asked += 1
        return super().owners(owner_paths)


def test_a_tables_columns_are_proven_once(monkeypatch: pytest.MonkeyPatch) -> None:
    plan, made = _compile_recording(monkeypatch)
    assert len(made) == 4  # inv, prod, strides, scale_alias: one table
    reader, last = _Counting(plan.model), None
    _Counting.asked = 0
    for column in made:
        last = column.bind(reader, last)
    assert _Counting.asked == 1
    assert last[1] is made[-1].owners and last[0] == [e.node.owner_path for e in made[-1].entries]
    for column in made:
        for owner, storage in zip(column.owners, column.storages):
            assert owner.__dict__[column.name] is storage


def test_a_later_column_is_proven_on_its_own_where_its_owners_differ() -> None:
    """A column whose owners are not the previous column's, row by row, is walked."""
    model = _model()
    reader = PathReader(model)
    layers = list(model.layers)

    class _Entry:
        def __init__(self, i: int, name: str):
            decl = type("D", (), {"location": SourceLocation()})()
            self.node = type("N", (), {"owner_path": f"layers.{i}", "decl": decl})()
            self.owner_path = self.node.owner_path  # an entry's own, its node's
            self.name = name

    rows = range(1, LAYERS)

    def column(name: str, owners: list[Any]) -> EntryColumn:
        col = EntryColumn(f"layers.0.{name}", name, [f"layers.{i}.{name}" for i in rows],
                          [_Entry(i, name) for i in rows], owners)  # type: ignore[misc]
        col.storages = [object() for _ in rows]  # type: ignore[misc]
        return col

    first = column("a", [layers[i] for i in rows])
    swapped = [layers[i] for i in rows]
    swapped[2], swapped[3] = swapped[3], swapped[2]
    second = column("b", swapped)
    last = first.bind(reader)
    with pytest.raises(SpecValidationError, match=r"entry column of layers.0.b holds another "
                       r"layer's owner at layers.3.b \(row 2\)"):
        second.bind(reader, last)
    assert not any("b" in vars(layer) for layer in layers)


def test_a_misordered_second_column_of_the_compile_is_refused(
        monkeypatch: pytest.MonkeyPatch) -> None:
    def swap_second(found: list[EntryColumn]) -> None:
        # the second column's own list, mis-ordered (a table's columns share one list of
        # owners, read only: swapping it in place would mis-order the first column too)
        owners = found[1].owners = list(found[1].owners)
        owners[2], owners[3] = owners[3], owners[2]

    model = _model()
    with pytest.raises(SpecValidationError, match="entry column of layers.0.prod holds another "
                       r"layer's owner at layers.3.prod \(row 2\)"):
        _compile_recording(monkeypatch, model, swap_second)
    for layer in model.layers:  # the transaction put everything back
        assert not {"inv", "prod", "strides", "scale_alias"} & set(vars(layer))


def test_adoptions_owner_paths_are_the_columns(monkeypatch: pytest.MonkeyPatch) -> None:
    """The columns adoption took keep the owner paths it read (its rows' nodes'): each column's
    ``owner_paths`` is its entries' owner paths, row by row, as a copy of its own."""
    _, made = _compile_recording(monkeypatch)
    assert len(made) == 4
    for column in made:
        assert column.paths is not None  # every column of the scaling table: adoption's
        got = column.owner_paths()
        assert got == [e.node.owner_path for e in column.entries]
        assert got is not column.paths


def test_a_column_without_adoptions_paths_reads_them() -> None:
    entries = [SimpleNamespace(owner_path=f"layers.{i}") for i in (1, 2)]
    column = EntryColumn("layers.0.x", "x", ["layers.1.x", "layers.2.x"], entries,  # type: ignore[arg-type]
                         [object(), object()])
    assert column.paths is None and column.owner_paths() == ["layers.1", "layers.2"]
    column.paths = ["layers.1"]  # not one per row: read from the entries
    assert column.owner_paths() == ["layers.1", "layers.2"]
