"""Held columns of one stamped stack share their owners: a column whose rows' owner paths and
owners are, row by row, those of the last column taken is proven by two sweeps (paths equal,
owners identical) instead of the owner walk's lookups, and takes that column's ``__dict__``s
(:func:`~derivgraph.runtime.accessors.holders_of`). Each case is compared with the reading
without columns (the reference)."""

from __future__ import annotations

from typing import Any

import pytest

from derivgraph.runtime.accessors import holders_of
from tests.runtime.test_hold47 import _compiled, _ids


class _Counted(dict):
    """The owner walk's objects, counting the lookups ``holders_of`` makes."""

    calls = 0

    def get(self, key: Any, default: Any = None) -> Any:
        type(self).calls += 1
        return super().get(key, default)


def _reference(plan: Any, entries: list[Any]) -> tuple[list, list, list]:
    return _ids(holders_of(plan.holders.hops.objects, plan.model, entries))


def test_the_columns_after_the_first_are_proven_by_the_first_s_owners(
        monkeypatch: pytest.MonkeyPatch) -> None:
    plan, kept = _compiled(monkeypatch)
    entries = plan.holders.table.entries
    want = _reference(plan, entries)
    columns = kept["held"]
    owners = _Counted(plan.holders.hops.objects)
    _Counted.calls = 0
    got = _ids(holders_of(owners, plan.model, entries, columns))
    assert got == want
    rest = len(entries) - sum(len(c[1]) for c in columns)  # the template's rows, by name
    assert rest == 4  # one row of each name: each name's group read once
    # the first column's rows, the rest's, and the root checked once and once per name
    assert _Counted.calls == len(columns[0][1]) + rest + 1 + 4


def test_canary_a_column_of_the_same_owners_on_other_rows_is_read_by_name(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Canary: a column whose owners are the first column's but whose rows are each one layer
    on (their owner paths differ) is refused by the walk as before: read by name."""
    plan, kept = _compiled(monkeypatch)
    entries = plan.holders.table.entries
    want = _reference(plan, entries)
    (name0, rows0, owners0, *_), (name1, rows1, _owners1, *_) = kept["held"][:2]
    columns = [(name0, rows0[:-1], owners0[:-1]), (name1, rows1[1:], owners0[:-1])]
    got = _ids(holders_of(plan.holders.hops.objects, plan.model, entries, columns))
    assert got == want and "decoy" not in got[1]


def test_canary_same_paths_other_owners_are_read_by_name(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Canary: a column on the second column's rows (the first's owner paths) whose owners are
    decoys (each holding the column's name in its ``__dict__``, which the real owners do not)
    is refused: the owners are compared by identity, not only the paths."""
    from torch import nn

    plan, kept = _compiled(monkeypatch)
    entries = plan.holders.table.entries
    want = _reference(plan, entries)
    (name0, rows0, owners0, *_), (name1, rows1, _owners1, *_) = kept["held"][:2]
    decoys = []
    for owner in owners0:
        decoy = nn.Module()
        decoy.__dict__["decoy"] = owner.__dict__[name1]
        decoys.append(decoy)
    columns = [(name0, rows0, owners0), ("decoy", rows1, decoys)]
    got = _ids(holders_of(plan.holders.hops.objects, plan.model, entries, columns))
    assert got == want and "decoy" not in got[1]
