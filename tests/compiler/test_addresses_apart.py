"""Addresses proved apart by one array sort, each answer the rule's.

* The layer proof's last check (:func:`derivgraph.compiler.lower_layers.rows_apart`, one array
  sort instead of a set per row) answers what the rule row by row answers (each row's
  addresses, one per position, distinct): on random address columns with duplicates planted
  within a row and across rows, on columns it cannot make one array of (a None, lengths that
  differ), and on the edge sizes.
* The schedule's layer fence (:func:`derivgraph.compiler.schedule_layers.apart_addresses`, one
  array sort instead of a set of every address) answers what the set rule answers (every own
  address distinct, across proofs too, and none a shared node's), and the fence it gives holds
  every own and shared address."""

from __future__ import annotations

import random
from types import SimpleNamespace
from typing import Any

import pytest

from derivgraph.compiler import schedule_layers
from derivgraph.compiler.lower_layers import rows_apart
from derivgraph.compiler.schedule_layers import apart_addresses


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


def _fence_reference(own: list[list[int]], shared: set[int]) -> bool:
    """The set rule (as ``_fence`` first wrote it): the addresses counted into one set."""
    seen: set[int] = set()
    count = 0
    for addresses in own:
        seen.update(addresses)
        count += len(addresses)
        if len(seen) != count:
            return False
    return shared.isdisjoint(seen)


@pytest.mark.parametrize("seed", range(20))
def test_the_fence_finds_an_address_twice_or_a_shared_one(seed: int) -> None:
    rng = random.Random(seed)
    own = [[rng.randrange(1, 2**47) * 8 for _ in range(rng.randrange(0, 400))]
           for _ in range(rng.randrange(1, 4))]
    flat = [a for part in own for a in part]
    shared = {rng.randrange(1, 2**47) * 8 + 4 for _ in range(rng.randrange(0, 4))}
    assert apart_addresses(own, shared) is _fence_reference(own, shared) is True
    if len(flat) < 2:
        return
    again = [list(part) for part in own]
    i, j = rng.sample(range(len(own)), 2) if len(own) > 1 and all(own) else (0, 0)
    again[i].append(rng.choice(own[j]))  # one address twice: in one proof or across two
    assert apart_addresses(again, shared) is _fence_reference(again, shared) is False
    for hit in (min(flat), max(flat), rng.choice(flat)):  # a shared node's storage is a layer's
        assert apart_addresses(own, shared | {hit}) is _fence_reference(own, shared | {hit}) \
            is False
    for miss in (min(flat) - 4, max(flat) + 4, 0, 2**64 - 1):
        assert apart_addresses(own, shared | {miss}) is _fence_reference(own, shared | {miss})


@pytest.mark.parametrize("own, shared", [
    ([], set()), ([], {5}), ([[]], {5}), ([[5]], {5}), ([[5]], {4, 6}), ([[1, 2], [3]], {9}),
    ([[1, 2], [2]], set()), ([[2**64 - 1, 3]], {2**64 - 2}), ([[2**64 - 1, 3]], {2**64 - 1}),
    ([[-1, 2]], set()), ([[-1, 2]], {-1}), ([[2**64, 2]], set()), ([[None, 2]], set()),
], ids=["none", "none-shared", "empty", "one-shared", "one-apart", "two-proofs", "across",
        "top-apart", "top-shared", "negative", "negative-shared", "too-large", "a-none"])
def test_fence_edges_and_addresses_it_cannot_sort_take_the_rule(own: list[list[int]],
                                                              shared: set[int]) -> None:
    assert apart_addresses(own, shared) is _fence_reference(own, shared)


def test_the_fence_is_made_of_every_own_and_shared_address() -> None:
    """The fenced set (made where it is read) is every proof's own addresses and every shared
    node's; None where an address is twice."""
    a, b = SimpleNamespace(table="a"), SimpleNamespace(table="b")
    proofs: list[Any] = [(a, ({1: 0}, [8, 16, 24], ["c"], {80}, [0])),
                         (b, ({2: 1}, [32], ["d"], {88, 80}, [1]))]
    fence = schedule_layers._fence(proofs)
    assert fence is not None and fence.fenced == {8, 16, 24, 32, 80, 88}
    assert fence.copy_of == {1: 0, 2: 1} and fence.templates == {0, 1}
    assert fence.shared == {"c", "d"} and fence.tables == ["a", "b"]
    twice: list[Any] = [(a, ({}, [8, 16], [], set(), [0])), (b, ({}, [16], [], set(), [1]))]
    assert schedule_layers._fence(twice) is None
