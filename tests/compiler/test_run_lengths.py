""":func:`derivgraph.compiler.stamp._one_length`, the run replay's test that every row has
the first row's length (:meth:`Stamper._replay_run
<derivgraph.compiler.stamp.Stamper._replay_run>`): a held run's rows are one object, taken
without a length read per row; rows that are distinct objects are measured. Canary: distinct
rows of another length are refused (red were the identity shortcut taken for any rows)."""

from __future__ import annotations

from derivgraph.compiler.stamp import _one_length


class _Counted(list[int]):
    """A row that counts its length reads."""

    reads = 0

    def __len__(self) -> int:
        _Counted.reads += 1
        return super().__len__()


def test_one_row_object_repeated_is_one_length_without_a_read_per_row() -> None:
    _Counted.reads = 0
    row = _Counted([1, 2])
    assert _one_length([row] * 1000)
    assert _Counted.reads == 0


def test_distinct_rows_are_measured() -> None:
    _Counted.reads = 0
    assert _one_length([_Counted([1, 2]), _Counted([3, 4]), _Counted([5, 6])])
    assert _Counted.reads == 4  # the first row's, then each row's
    assert not _one_length([[1, 2], [1, 2], [1]])
    assert not _one_length([[1, 2], [1, 2, 3]])
    assert _one_length([[1]])
