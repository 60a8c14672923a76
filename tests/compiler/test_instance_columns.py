"""``InstanceTable.column`` and ``InstanceTable.columns`` (every column at once, the rows
zipped once and kept; ``column`` reads it) answer the per-row rule (template node ``k``'s
counterpart in every row) after every way the library changes a table's rows; a caller is
handed the held column (graph83: no copy; it copies to own it). Canaries: each of the kept
columns' two checks (the rows list's identity, its length) dropped turns a test here red."""

from __future__ import annotations

import pytest

from derivgraph.compiler.instances import InstanceTable


def _rule(table: InstanceTable, k: int) -> list[str]:
    """The column written out per row."""
    return [row[k] for row in table.rows]


def _table(n: int, tag: str = "") -> InstanceTable:
    rows = [(f"l.{i}.a{tag}", f"l.{i}.b{tag}", f"%{i}:mul{tag}") for i in range(n)]
    return InstanceTable(("l.0.a", "l.0.b", "%0:mul"), rows, "l.0", [f"l.{i}" for i in range(n)],
                         list(range(n)))


@pytest.mark.parametrize("n", [0, 1, 5])
def test_every_column_read_twice_is_the_rule(n: int) -> None:
    table = _table(n)
    for _ in range(2):
        for k in range(3):
            assert table.column(k) == _rule(table, k)


def test_a_caller_is_handed_the_held_column_and_copies_it_to_own_it() -> None:
    """graph83: ``column`` hands the held column (no copy; every reader in the library only
    reads it, tests/compiler/test_held_columns_read.py); a caller that changes its list
    copies it first, and the table stays the rule's."""
    table = _table(4)
    assert table.column(1) is table.column(1) is table.cols[1]
    first = list(table.column(1))
    first.append("extra")
    first[0] = "changed"
    assert table.column(1) == _rule(table, 1) == ["l.0.b", "l.1.b", "l.2.b", "l.3.b"]


def test_appended_rows_are_read() -> None:
    table = _table(3)
    assert table.column(0) == _rule(table, 0)
    table.add_row(("x.a", "x.b", "%9:mul"), "x", 9)
    assert table.column(0)[-1] == "x.a" and table.column(0) == _rule(table, 0)
    table.add_rows([("y.a", "y.b", "%10:mul"), ("z.a", "z.b", "%11:mul")], ["y", "z"], [10, 11])
    for k in range(3):
        assert table.column(k) == _rule(table, k)


def test_a_new_rows_list_of_the_same_length_is_read() -> None:
    table = _table(3)
    assert table.column(2) == _rule(table, 2)
    table.rows = _table(3, "'").rows
    assert table.column(2) == _rule(table, 2) == ["%0:mul'", "%1:mul'", "%2:mul'"]


def test_a_subset_reads_its_own_rows() -> None:
    table = _table(5)
    assert table.column(0) == _rule(table, 0)
    kept = table.subset([True, False, True, False, True])
    assert kept.column(0) == ["l.0.a", "l.2.a", "l.4.a"] == _rule(kept, 0)
    assert table.column(0) == _rule(table, 0)


def test_the_kept_columns_are_not_in_the_repr_or_the_constructor() -> None:
    table = _table(2)
    table.column(0)
    assert "_columns" not in repr(table)
    with pytest.raises(TypeError):
        InstanceTable(("a",), _columns={})  # type: ignore[call-arg]


@pytest.mark.parametrize("n", [0, 1, 5])
def test_every_column_at_once_is_the_rule_and_a_new_list(n: int) -> None:
    table = _table(n)
    for _ in range(2):
        got = table.columns()
        assert [list(c) for c in got] == ([_rule(table, k) for k in range(3)] if n else [])
        got.append(("extra",))
        assert len(table.columns()) == (3 if n else 0)


@pytest.mark.parametrize("change", ["append", "append-many", "new-list", "subset"])
def test_every_column_at_once_after_each_change_of_the_rows(change: str) -> None:
    table = _table(3)
    assert [list(c) for c in table.columns()] == [_rule(table, k) for k in range(3)]
    if change == "append":
        table.add_row(("x.a", "x.b", "%9:mul"), "x", 9)
    elif change == "append-many":
        table.add_rows([("y.a", "y.b", "%10:mul"), ("z.a", "z.b", "%11:mul")], ["y", "z"],
                       [10, 11])
    elif change == "new-list":
        table.rows = _table(3, "'").rows
    else:
        table = table.subset([True, False, True])
    want = [_rule(table, k) for k in range(3)]
    assert [list(c) for c in table.columns()] == want
    assert [table.column(k) for k in range(3)] == want
