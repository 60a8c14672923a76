"""The refill table's pick of its targets from a read of every holder (``engine._picker``):
None exactly where the positions are the whole list in order, else a pick of those positions
(a part, a reordering of every position, one position, none)."""

from __future__ import annotations

import pytest

from derivgraph.runtime.engine import _picker

_CASES = {
    "every position, in order": (list(range(6)), 6),
    "nothing of nothing": ([], 0),
    "none of six": ([], 6),
    "one": ([4], 6),
    "a part from the start": ([0, 1, 2], 6),
    "a strided part": ([0, 2, 4], 6),
    "every position, reordered": ([1, 0, 2, 3, 4, 5], 6),
    "every position, one repeated": ([0, 1, 2, 3, 4, 4], 6),
    "more positions than the list": ([0, 1, 2, 3, 4, 5, 0], 6),
}


@pytest.mark.parametrize("case", list(_CASES))
def test_the_pick_is_none_only_for_the_whole_list(case: str) -> None:
    index, size = _CASES[case]
    pick = _picker(index, size)
    whole = index == list(range(size))
    assert (pick is None) == whole
    values = [f"v{i}" for i in range(size)]
    assert (values if pick is None else pick(values)) == [values[i] for i in index]
