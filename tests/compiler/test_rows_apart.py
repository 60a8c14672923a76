"""Storage a layer's template holds apart is apart in every row: the layer proof's last check
(:func:`derivgraph.compiler.lower_layers.rows_apart`, one array sort instead of a set per row)
answers what the rule row by row answers (each row's addresses, one per position, distinct):
on random address columns with duplicates planted within a row and across rows, on columns
it cannot make one array of (a None, lengths that differ), and on the edge sizes."""

from __future__ import annotations

import random

import pytest

from derivgraph.compiler.lower_layers import rows_apart


def _reference(columns: list[list[int | None]]) -> bool:
    """The rule row by row (as ``_columns_hold`` first wrote it)."""
    return all(len(set(row)) == len(columns) for row in zip(*columns))


def _columns(rng: random.Random, width: int, n: int, top: int = 2**47) -> list[list[int]]:
    return [[rng.randrange(1, top) * 8 for _ in range(n)] for _ in range(width)]


@pytest.mark.parametrize("seed", range(20))
def test_distinct_rows_are_apart_and_a_planted_pair_is_not(seed: int) -> None:
    rng = random.Random(seed)
    width, n = rng.randrange(2, 9), rng.randrange(1, 300)
    columns = _columns(rng, width, n)
    assert rows_apart(columns) is _reference(columns) is True
    row, a, b = rng.randrange(n), *rng.sample(range(width), 2)
    columns[b][row] = columns[a][row]  # two positions of one row share storage
    assert rows_apart(columns) is _reference(columns) is False


@pytest.mark.parametrize("seed", range(10))
def test_an_address_repeated_across_rows_is_apart(seed: int) -> None:
    """One address in many rows (a node every row shares) or at another position of another
    row is not a row holding one storage twice."""
    rng = random.Random(seed)
    width, n = rng.randrange(2, 7), rng.randrange(2, 200)
    columns = _columns(rng, width, n)
    columns[-1] = [columns[-1][0]] * n  # a shared node's storage, in every row
    for _ in range(5):
        columns[rng.randrange(width - 1)][rng.randrange(n)] = columns[rng.randrange(width)][
            rng.randrange(n)]
    assert rows_apart(columns) is _reference(columns)


@pytest.mark.parametrize("columns", [
    [], [[1, 2, 3]], [[], []], [[5], [5]], [[5], [6]],
    [[2**64 - 1, 3], [2**64 - 2, 3]], [[2**64 - 1, 1], [2**64 - 1, 2]],
    [[None, 1], [None, 2]], [[None, 1], [4, 2]], [[1, 2, 3], [4, 5]], [[1, 2], [1, 5, 6]],
    [[1, 2], [3, 4], [5, 2]], [[1, 2], [3, 4], [5, 6]],
], ids=["none", "one", "empty-rows", "one-row-shared", "one-row-apart", "top-apart",
        "top-shared", "none-twice", "none-once", "ragged-apart", "ragged-shared",
        "last-row-shared", "three-apart"])
def test_edges_and_columns_it_cannot_sort_take_the_rule(columns: list[list[int | None]]
                                                        ) -> None:
    assert rows_apart(columns) is _reference(columns)
