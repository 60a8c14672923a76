"""The compile's entries in no entry column (``planner._outside_columns``).

Adoption hands on its ids and the positions of the ids in no column it took whole; the
compile takes those positions where its entry columns are exactly adoption's (each column's
ids the very list of a distinct taken column, as many rows in all), else looks every id up in
the columns' ids (the rule). Canaries: the positions taken where a taken column was not kept
(a column dropped), or where a column is not one of adoption's.
"""

from __future__ import annotations

import operator
from itertools import compress
from types import SimpleNamespace
from typing import Any

import pytest

from derivgraph import compile_plan
from derivgraph import planner as planner_module
from derivgraph.compiler.stamp import stamping
from derivgraph.tools.bench_scaling import scaling_model, scaling_spec

IDS = [f"l{i}.{n}" for i in range(4) for n in ("a", "b", "c")]


class _Column(SimpleNamespace):
    def __len__(self) -> int:
        return len(self.ids)


def _reference(ids: list[str], columns: list[Any]) -> list[int]:
    """The rule: each id looked up in the columns' ids."""
    inside = {i for c in columns for i in c.ids}
    return list(compress(range(len(ids)), map(operator.not_, map(inside.__contains__, ids))))


def _taken() -> tuple[list[Any], list[int]]:
    """Two columns adoption took (the rows of "a" and "b" past layer 0) and its positions."""
    proven = [SimpleNamespace(ids=IDS[3::3]), SimpleNamespace(ids=IDS[4::3])]
    inside = {i for p in proven for i in p.ids}
    return proven, [k for k, i in enumerate(IDS) if i not in inside]


def test_adoptions_columns_kept_whole_take_its_positions() -> None:
    proven, outside = _taken()
    columns = [_Column(ids=p.ids) for p in proven]
    got = planner_module._outside_columns(IDS, columns, proven, outside)
    assert got is outside
    assert got == _reference(IDS, columns)


@pytest.mark.parametrize("case", ["a column dropped", "a copy of the ids", "one column twice",
                                  "another column", "positions of other columns"])
def test_other_columns_are_looked_up(case: str) -> None:
    proven, outside = _taken()
    columns = [_Column(ids=p.ids) for p in proven]
    if case == "a column dropped":
        columns = columns[:1]
    elif case == "a copy of the ids":
        columns[1] = _Column(ids=list(proven[1].ids))
    elif case == "one column twice":
        columns[1] = _Column(ids=proven[0].ids)
    elif case == "another column":
        columns.append(_Column(ids=IDS[5::3]))
    else:
        outside = outside[1:]
    got = planner_module._outside_columns(IDS, columns, proven, outside)
    assert got == _reference(IDS, columns)


def test_the_compile_takes_adoptions_positions(monkeypatch: pytest.MonkeyPatch) -> None:
    """The stamped scaling model: every column adoption took is kept, so its positions are
    the answer, and they are the rule's."""
    seen: list[tuple[list[int], list[int], list[int]]] = []
    real = planner_module._outside_columns

    def spy(ids: list[str], columns: Any, proven: Any, outside: list[int]) -> list[int]:
        got = real(ids, columns, proven, outside)
        seen.append((got, outside, _reference(ids, list(columns))))
        return got

    monkeypatch.setattr(planner_module, "_outside_columns", spy)
    with stamping(True):
        plan = compile_plan(scaling_model(12), [scaling_spec()])
    (got, outside, want), = seen
    assert got is outside and got == want
    assert len(plan.entries) == 48 and len(want) == 4  # layer 0's (the templates) only
