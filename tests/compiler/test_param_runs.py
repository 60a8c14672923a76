"""``ParamStamper.proven_after``: the rows right after a row that the kind's first template
proved, up to the first row it did not prove, are resolved at once (each its own copy of the
template's params, each counted) and leave the proofs; the rows after that stretch keep
theirs. ``rows_hold`` marks exactly the rows the proof proved. Canaries (see the helper's
NOTES): the stretch one row short; one row of it left among the proofs; no row marked."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from derivgraph.compiler import stamp_columns
from derivgraph.compiler.graph import DerivedGraph
from derivgraph.compiler.stamp_columns import rows_hold
from derivgraph.compiler.stamp_params import ParamStamper


class _Layer:
    pass


def _stamper(proven: dict[int, object], reads: object) -> ParamStamper:
    spec = SimpleNamespace(params={"E": "x"})
    bounds = [SimpleNamespace(spec=spec, module=_Layer(), module_path=f"l.{i}")
              for i in range(10)]
    stamper = ParamStamper(DerivedGraph(None), bounds)  # type: ignore[arg-type]
    stamper.templates[(id(spec), _Layer)] = [(reads, {"E": 8})]  # type: ignore[list-item]
    stamper.proven = dict(proven)  # type: ignore[arg-type]
    return stamper


@pytest.mark.parametrize("gap", [4, 7, 10], ids=["gap", "last-row", "to-the-end"])
def test_the_stretch_after_a_row_is_resolved_and_leaves_the_proofs(gap: int) -> None:
    reads, other = object(), object()
    proven = {i: reads for i in range(1, 10) if i != gap}
    if gap < 9:
        proven[gap] = other  # another template's proof ends the stretch too
    stamper = _stamper(proven, reads)
    params = stamper.proven_after(0)
    size = min(gap, 10) - 1
    assert params == [{"E": 8}] * size and stamper.stamped == size
    assert len({id(p) for p in params}) == size  # each row its own copy
    assert stamper.proven == {i: r for i, r in proven.items() if i > size}
    assert stamper.proven_after(9) == [] and stamper.stamped == size


def test_nothing_proven_right_after_gives_nothing() -> None:
    reads = object()
    stamper = _stamper({3: reads}, reads)
    assert stamper.proven_after(0) == [] and stamper.proven == {3: reads}


def test_rows_hold_marks_the_proven_rows(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(stamp_columns, "_holding", lambda *args: ([1, 3, 4], [], []))
    assert rows_hold(None, None, [None] * 6, [{}] * 6) == [  # type: ignore[arg-type]
        False, True, False, True, True, False]
