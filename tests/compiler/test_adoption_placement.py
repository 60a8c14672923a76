"""Adoption puts the rows of the columns it took at their places in the compile's order
(``adoption._placed``): by one slice each where every column's ids lie evenly spaced in the
order and no two share a place, else by id (the rule); the answer is the rule's either way."""

from __future__ import annotations

from itertools import compress
from typing import Any, NamedTuple

import pytest

from derivgraph import adoption


class _Column(NamedTuple):
    ids: list[str]
    entries: list[Any]
    extras: list[Any]


def _column(ids: list[str], tag: str) -> _Column:
    return _Column(ids, [f"{tag}:{i}" for i in ids], [(tag, i) for i in ids])


def _rule(ids: list[str], taken: list[_Column]) -> tuple[list[Any], list[int]]:
    """The dict by id, looked up at every id (a later column's row replacing an earlier's)."""
    by_id: dict[str, Any] = {}
    for c in taken:
        by_id.update(zip(c.ids, zip(c.entries, c.extras)))
    slots = [by_id.get(i) for i in ids]
    return slots, list(compress(range(len(ids)), [s is None for s in slots]))


_IDS = [f"n{i}" for i in range(40)]
CASES = {
    "none": [],
    "strided": [_column(_IDS[4:40:4], "a"), _column(_IDS[5:40:4], "b")],
    "adjacent": [_column(_IDS[10:20], "a")],
    "one row": [_column(["n7"], "a")],
    "empty column": [_column([], "a")],
    "every id": [_column(_IDS[0::2], "a"), _column(_IDS[1::2], "b")],
    "not evenly spaced": [_column(["n1", "n2", "n4"], "a")],
    "out of order": [_column(["n9", "n3", "n6"], "a")],
    "an id not in the order": [_column(["n1", "n2", "m3"], "a")],
    "overlapping columns": [_column(_IDS[0:10:2], "a"), _column(_IDS[4:12:2], "b")],
    "the same column twice": [_column(_IDS[3:9], "a"), _column(_IDS[3:9], "b")],
    "first id repeated": [_column(["n2", "n2"], "a")],
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_placed_is_the_rule(case: str) -> None:
    taken = CASES[case]
    slots, rest, spans = adoption._placed(_IDS, taken)  # type: ignore[arg-type]
    # a column's row is marked, answered from its column where read (Planned)
    planned = list(adoption.Planned(slots, spans)) if spans else slots
    assert (planned, rest) == _rule(_IDS, taken)


def test_evenly_spaced_ids_are_found_as_slices() -> None:
    """``span_of``: the slice for evenly spaced ids; None for ids spaced otherwise, an id not
    in the order, no ids."""
    taken = CASES["strided"]
    spans = [adoption.span_of(_IDS, c.ids) for c in taken]
    assert spans == [slice(4, 37, 4), slice(5, 38, 4)]
    assert adoption.span_of(_IDS, ["n1", "n2", "n4"]) is None
    assert adoption.span_of(_IDS, ["m1"]) is None and adoption.span_of(_IDS, []) is None


def test_a_stamped_compile_places_its_columns_by_slices(monkeypatch: pytest.MonkeyPatch) -> None:
    """The scaling workload's four columns all take the slices; the plan is the rule's."""
    from derivgraph.compiler.owners import PathReader
    from derivgraph.compiler.stamp import stamping
    from derivgraph.planner import _prepare
    from derivgraph.tools.bench_scaling import scaling_model, scaling_spec

    spans: list[Any] = []
    real = adoption.span_of
    monkeypatch.setattr(adoption, "span_of", lambda ids, rows: spans.append(real(ids, rows))
                        or spans[-1])
    model = scaling_model(6)
    proven: list[Any] = []
    order: list[Any] = []
    with stamping(True):
        plan, values, planned, _ = _prepare(model, [scaling_spec()], False, True, proven, order)
        assert len(proven) == 4 and len(spans) == 4 and None not in spans
        ids, rest = order
        slots, rule_rest = _rule(ids, proven)
        assert rest == rule_rest and len(planned) == len(slots)
        assert all(s is None or (s[0] is p[0] and s[1] is p[1]) for s, p in zip(slots, planned))
        monkeypatch.setattr(adoption, "span_of", lambda ids, rows: None)  # the rule's path
        again = adoption.adopt_or_allocate(plan, values, PathReader(model))
    assert [_facts(e, x) for e, x in again] == [_facts(e, x) for e, x in planned]


def _facts(entry: Any, extra: Any) -> tuple:
    kept = extra if isinstance(extra, adoption.AliasOf) else id(extra)
    return entry.id, id(entry.node), id(entry.storage), entry.slot, entry.adopted, kept
