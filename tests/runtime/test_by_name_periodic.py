"""``accessors.by_name`` of names that repeat one run (a stamped table's rows).

The oracle is the rule: one pass over the names, each position appended to its name's list,
the names in the order they first appear (the dict's keys, compared in order). Where the names
are one run of distinct ``str`` s repeated whole, the positions are ``range`` s (``_periodic``;
compared as lists, the rule's);
canaries: names that break the repetition (a last row that differs, a partial last run, a
run holding a name twice) take the pass and give its answer.
"""

from __future__ import annotations

import random
from typing import Any

import pytest

from derivgraph.runtime import accessors
from derivgraph.runtime.accessors import by_name


def _rule(names: list[Any]) -> dict[Any, list[int]]:
    groups: dict[Any, list[int]] = {}
    for i, name in enumerate(names):
        groups.setdefault(name, []).append(i)
    return groups


def _same(names: list[Any]) -> None:
    got, want = by_name(names), _rule(names)
    assert {k: list(v) for k, v in got.items()} == want and list(got) == list(want)
    assert all(got_key is want_key for got_key, want_key in zip(got, want))


def test_a_repeated_run_is_answered_by_ranges() -> None:
    names = ["scale", "weight", "bias"] * 1000
    assert accessors._periodic(names) == {"scale": range(0, 3000, 3),  # ranges (prepare83)
                                          "weight": range(1, 3000, 3),
                                          "bias": range(2, 3000, 3)}
    _same(names)
    _same(["w"] * 7)  # a run of one name
    _same(["a", "b"])  # one run


@pytest.mark.parametrize("names", [
    ["a", "b", "a", "c"],  # the last row differs
    ["a", "b", "a", "b", "a"],  # a partial last run
    ["a", "b", "b", "a", "b", "b"],  # a run holding a name twice
    ["b", "a", "a", "b", "a", "a"],
    ["a", "b", "c"],  # the first name never again
    ["a"], [],
])
def test_names_that_break_the_repetition_take_the_pass(names: list[str]) -> None:
    assert accessors._periodic(names) is None
    _same(names)


def test_other_sequences_and_names_take_the_pass() -> None:
    assert accessors._periodic([1, 2, 1, 2]) is None  # no str
    _same([1, 2, 1, 2])
    names = ("x", "y", "x", "y")
    assert by_name(names) == _rule(list(names))  # not a list: the pass


def test_random_names_match_the_rule() -> None:
    rng = random.Random(0)
    for _ in range(300):
        run = rng.sample(["a", "b", "c", "d", "e"], rng.randint(1, 4))
        names = run * rng.randint(1, 6)
        if rng.random() < 0.5 and names:
            names[rng.randrange(len(names))] = rng.choice(["a", "b", "z"])
        _same(names)
