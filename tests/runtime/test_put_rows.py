"""``accessors.put_rows`` (prepare83): ``out[rows[k]] = values[k]`` as one extended-slice
assignment where ``rows`` is a ``range`` (a stamped table's rows from ``by_name``), else one
``setitem`` sweep (the rule). The oracle is the loop of item stores, on lists and
bytearrays, ranges of every step and start, lists of positions, and the edges the slice must
not take (a range reaching past ``out``, values of another length, a negative start or
step): those give the rule's answer (or its error). And ``holder_dicts`` / ``holders_of``
of a stamped model answer as the rule does. Canaries: a planted slice without its step, or
one taken for a range reaching past ``out``, goes red.
"""

from __future__ import annotations

import random
from typing import Any

import pytest

from derivgraph.runtime import accessors
from derivgraph.runtime.accessors import put_rows


def _rule(out: Any, rows: Any, values: Any) -> Any:
    out = type(out)(out)
    for i, v in zip(rows, values):
        out[i] = v
    return out


def _check(out: Any, rows: Any, values: Any) -> None:
    want: Any = None
    try:
        want = _rule(out, rows, values)
    except IndexError:
        with pytest.raises(IndexError):
            put_rows(type(out)(out), rows, values)
        return
    got = type(out)(out)
    put_rows(got, rows, values)
    assert got == want and len(got) == len(out)


def test_ranges_and_lists_match_the_item_stores() -> None:
    rng = random.Random(0)
    for _ in range(400):
        n = rng.randint(0, 40)
        step = rng.randint(1, 6)
        start = rng.randint(0, 8)
        rows: Any = range(start, rng.randint(start, max(start, n + 3)), step)
        if rng.random() < 0.3:
            rows = list(rows)
        values = [rng.random() for _ in rows]
        _check([None] * n, rows, values)
        _check(bytearray(n), rows, bytes(rng.randint(1, 9) for _ in rows))


@pytest.mark.parametrize("rows, values", [
    (range(0, 10, 2), [1, 2, 3]),  # fewer values: the sweep stores what there is
    (range(0, 4), [1, 2, 3, 4, 5]),  # more values (a step-1 slice would grow the list)
    (range(6, 12), [1] * 6),  # past the end: IndexError, as the rule
    (range(-2, 4), [1] * 6),  # a negative start
    (range(5, 0, -1), [1] * 5),  # a negative step
    (range(0), []),
])
def test_edges_take_the_rule(rows: Any, values: Any) -> None:
    _check([0] * 8, rows, values)


def test_a_stamped_tables_rows_are_ranges_and_filled_whole() -> None:
    names = ["scale", "weight"] * 50
    groups = accessors.by_name(names)
    assert all(type(r) is range for r in groups.values())
    out: list[Any] = [None] * len(names)
    for name, rows in groups.items():
        accessors.put_rows(out, rows, [f"{name}{i}" for i in rows])
    assert out == [f"{n}{i}" for i, n in enumerate(names)]


def _planted(no_step: bool) -> Any:
    def planted(out: Any, rows: Any, values: Any) -> None:
        if type(rows) is range and len(values) == len(rows):
            if no_step:
                out[rows.start:rows.start + len(rows)] = values
            else:  # no bound check: a step-1 range past the end grows ``out``
                out[rows.start:rows.stop:rows.step] = values
            return
        for i, v in zip(rows, values):
            out[i] = v
    return planted


@pytest.mark.parametrize("no_step", [True, False], ids=["no-step", "no-bound"])
def test_canary_a_planted_slice_is_caught(no_step: bool, monkeypatch: pytest.MonkeyPatch) \
        -> None:
    monkeypatch.setattr(accessors, "put_rows", _planted(no_step))
    red = False
    try:
        if no_step:
            test_a_stamped_tables_rows_are_ranges_and_filled_whole()
        else:
            out = [0] * 8
            accessors.put_rows(out, range(6, 12), [1] * 6)
            red = len(out) != 8
    except AssertionError:
        red = True
    assert red
