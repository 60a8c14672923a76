"""A watch's items grouped by the dict that holds them
(:func:`~derivgraph.runtime.watch.group_by_dict`).

A table whose every dict holds one run of adjacent items (a stamped table: each owner's holders,
sources and hops in a row) is grouped by its runs in C-level sweeps; any other table is grouped
item by item, the rule. Both must give the same distinct dicts (by identity, first-seen order),
the same item indices per dict (ascending) and the same items outside any dict. Canaries:
``benchmarks/results/prepare61/NOTES.md``.
"""

from __future__ import annotations

import random
from typing import Any

import pytest

from derivgraph import dict_versions
from derivgraph.compiler.stamp import stamping
from derivgraph.planner import compile_plan
from derivgraph.runtime import watch
from derivgraph.runtime.accessors import NO_DICT
from derivgraph.tools.bench_scaling import scaling_model, scaling_spec

Grouping = tuple[list[dict[Any, Any]], list[list[int]], list[int]]


def _rule(dicts: list[dict[Any, Any]], outside: dict[Any, Any],
          monkeypatch: pytest.MonkeyPatch) -> Grouping:
    """The item-by-item grouping (the runs' path turned off)."""
    with monkeypatch.context() as patch:
        patch.setattr(watch, "_by_runs", lambda dicts, outside: None)
        unique, members, always = watch.group_by_dict(dicts, outside)
    return unique, [list(m) for m in members], always


def _same(got: tuple[Any, Any, Any], want: Grouping) -> None:
    unique, members, always = got
    assert len(unique) == len(want[0]) and all(map(lambda a, b: a is b, unique, want[0]))
    assert [list(m) for m in members] == want[1]
    assert list(always) == want[2]


OUT: dict[Any, Any] = {}
A, B, C = {"a": 1}, {"a": 1}, {"c": 3}  # A and B equal by value: grouped by identity only

TABLES = {
    "empty": [],
    "one": [A],
    "runs": [A, A, B, B, B, C],
    "a dict again later": [A, B, A],
    "equal dicts apart": [A, B, B, A, C],
    "outside first": [OUT, OUT, A, B],
    "outside last": [A, A, B, OUT],
    "outside in the middle": [A, OUT, OUT, B, B],
    "outside twice": [OUT, A, OUT, B],
    "only outside": [OUT, OUT, OUT],
    "alternating": [A, B] * 4,
}


@pytest.mark.parametrize("name", list(TABLES))
def test_grouping_by_runs_is_the_item_by_item_rule(name: str,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    dicts = TABLES[name]
    _same(watch.group_by_dict(dicts, OUT), _rule(dicts, OUT, monkeypatch))


def test_random_tables_are_grouped_as_the_rule(monkeypatch: pytest.MonkeyPatch) -> None:
    rng = random.Random(61)
    pool = [{} for _ in range(5)] + [OUT]
    runs = 0
    for _ in range(3000):
        kinds = pool[:rng.randint(1, len(pool))]
        if rng.random() < 0.5:  # runs: each chosen dict once, repeated in place
            order = rng.sample(kinds, len(kinds))
            dicts = [d for d in order for _ in range(rng.randint(1, 4))]
        else:
            dicts = [rng.choice(kinds) for _ in range(rng.randint(0, 12))]
        runs += watch._by_runs(dicts, OUT) is not None
        _same(watch.group_by_dict(dicts, OUT), _rule(dicts, OUT, monkeypatch))
    assert 1000 < runs < 3000  # both paths taken


def _compiled(layers: int = 40) -> Any:
    spec = scaling_spec()
    with stamping(True):
        return compile_plan(scaling_model(layers), [spec])


def test_the_stamped_tables_are_grouped_by_their_runs(monkeypatch: pytest.MonkeyPatch) -> None:
    """The scaling plan's holders, owner hops and sources' holder dicts are one run per dict:
    grouped by their runs, as the rule groups them."""
    plan = _compiled()
    holders = plan.holders
    tables = {"holders": holders.table.dicts, "hops": holders.hops.dicts,
              "sources": holders._source_checks[0]}
    for name, dicts in tables.items():
        assert watch._by_runs(dicts, NO_DICT) is not None, name
        _same(watch.group_by_dict(dicts, NO_DICT), _rule(dicts, NO_DICT, monkeypatch))
    assert len(holders.table.dicts) == 4 * 40 and len(set(map(id, holders.table.dicts))) == 40


@pytest.mark.skipif(not dict_versions.AVAILABLE, reason="no PEP 509 version tags")
@pytest.mark.parametrize("outside", [False, True])
def test_a_watch_grouped_by_runs_reports_the_items_of_a_mutated_dict(
        outside: bool, monkeypatch: pytest.MonkeyPatch) -> None:
    """The watch built on the runs' grouping names, after a dict is mutated, the items of that
    dict (and the items outside any dict), as the watch built on the rule's grouping does."""
    monkeypatch.setattr(watch, "MIN_WATCHED", 0)
    owners = [{"w": object(), "s": object(), "b": object()} for _ in range(30)]
    dicts = [d for d in owners for _ in range(3)]
    if outside:
        dicts[6:9] = [NO_DICT] * 3
    fast = watch.watch_items(dicts, NO_DICT)
    with monkeypatch.context() as patch:
        patch.setattr(watch, "_by_runs", lambda dicts, outside: None)
        slow = watch.watch_items(dicts, NO_DICT)
    assert fast is not None and slow is not None
    assert fast.suspects() == slow.suspects() == ([6, 7, 8] if outside else [])
    owners[4]["w"] = object()
    owners[17]["b"] = object()
    expected = [*([6, 7, 8] if outside else []), 12, 13, 14, 51, 52, 53]
    assert fast.suspects() == slow.suspects() == expected
    fast.settle()
    assert fast.suspects() == ([6, 7, 8] if outside else [])
