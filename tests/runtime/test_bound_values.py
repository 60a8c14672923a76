"""``BoundTensors.bound_values`` is :meth:`~BoundTensors.bound` of each ref, in its table order.

The sweep takes a column bound wholly in one table (after the sources: the first table that
binds any of its refs binds them all), or bound nowhere, in one pass per table; any other
column is resolved ref by ref. Each case is compared by identity with ``bound`` one at a time;
canaries: a column split across two tables, and one whose first ref is shadowed by an earlier
table, must not be taken from one table.
"""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest
import torch

from derivgraph.runtime.storage import BoundTensors

_MISSING = object()


@pytest.fixture()
def tensors() -> BoundTensors:
    t = BoundTensors(None, {})  # type: ignore[arg-type] - bound_values reads the tables only
    t.sources = {f"s{i}": torch.zeros(1) for i in range(4)}
    t.entries = {f"e{i}": SimpleNamespace(storage=torch.zeros(1)) for i in range(4)}
    t.entries["e_scalar"] = SimpleNamespace(storage=2.0)  # a derived Python scalar's entry
    t.views = {f"v{i}": torch.zeros(1) for i in range(4)}
    t.stages = {f"g{i}": torch.zeros(1) for i in range(4)}
    t.constants = {f"c{i}": torch.zeros(1) for i in range(4)}
    t.stages["v0"] = torch.ones(1)  # shadowed: bound() reads views first
    t.constants["g0"] = torch.ones(1)  # shadowed by a stage
    t.constants["v1"] = torch.ones(1)  # shadowed by a view
    return t


def _one_by_one(tensors: BoundTensors, refs: list[str], missing: Any) -> list[Any]:
    out = []
    for ref in refs:
        try:
            out.append(tensors.bound(ref))
        except KeyError:
            out.append(missing)
    return out


COLUMNS = {
    "empty": [],
    "sources": ["s0", "s1", "s2", "s3"],
    "entries": ["e0", "e1", "e_scalar", "e2"],
    "views": ["v0", "v1", "v2"],
    "stages": ["g0", "g1", "g2"],
    "constants": ["c0", "c1", "c2"],
    "unbound": ["x0", "x1"],
    "sources and entries": ["s0", "e0", "s1"],
    "entries and views": ["e0", "v2", "e1"],
    "entries and unbound": ["e0", "x0"],
    "views and unbound": ["v2", "x0"],
    "split views, stages": ["v2", "g1", "v3"],
    "shadowed first": ["v0", "g1", "g2"],  # v0 is a stage too: taken from the views
    "shadowed constant": ["v1", "c0"],
    "stage over constant": ["g0", "g1"],
    "repeated": ["v2", "v2", "e0", "e0"],
}


@pytest.mark.parametrize("name", list(COLUMNS))
@pytest.mark.parametrize("missing", [None, _MISSING])
def test_bound_values_is_bound_one_by_one(tensors: BoundTensors, name: str, missing: Any) -> None:
    refs = COLUMNS[name]
    got = tensors.bound_values(iter(refs), missing)  # any iterable of refs
    want = _one_by_one(tensors, refs, missing)
    assert len(got) == len(want) == len(refs)
    assert all(a is b for a, b in zip(got, want, strict=True)), name


def test_canary_split_column_is_not_one_table(tensors: BoundTensors) -> None:
    """A column bound partly in the views, partly in the stages: a sweep taking the first
    table that binds any ref for all of them would leave holes (red without the check that
    the table binds them all)."""
    got = tensors.bound_values(["v2", "g1"], _MISSING)
    assert got[0] is tensors.views["v2"] and got[1] is tensors.stages["g1"]


def test_canary_shadowed_ref_comes_from_the_first_table(tensors: BoundTensors) -> None:
    """``v0`` is bound as a view and as a stage; with ``g1`` the column is wholly in the
    stages, but bound() reads ``v0`` from the views (red for a sweep that takes the first
    table binding all the refs rather than the first binding any)."""
    got = tensors.bound_values(["v0", "g1"])
    assert got[0] is tensors.views["v0"] is not tensors.stages["v0"]
    assert got[1] is tensors.stages["g1"]


def test_unbound_column_gives_missing(tensors: BoundTensors) -> None:
    assert tensors.bound_values(["x0", "x1"], _MISSING) == [_MISSING, _MISSING]
    assert tensors.bound_values(["x0"]) == [None]
