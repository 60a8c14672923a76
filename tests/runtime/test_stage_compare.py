"""The refill's derived Python scalars compared per buffer (e2e29): one ``tolist()`` per staging
buffer compared as a list with the numbers the entries hold; only a difference runs the
per-target compare that sets the new number, re-binds it and reports the recapture."""

from __future__ import annotations

from derivgraph.runtime.storage import BoundTensors
from tests.runtime.test_scalar_stages import ONE, Scales, _expected, _now, _plan

TARGETS = [f"{n}_max" for n in (*ONE, "rows")]


def test_unchanged_numbers_read_once_per_buffer_and_set_nothing():
    model = Scales()
    plan = _plan(model)
    model.load({"s0": 3.0, "rows": 9.0})
    plan.refill()
    assert plan.tensors.staged_if_changed(TARGETS) is None  # every number as it was
    report = plan.refill()
    assert report.recapture_required == []
    assert _now(model) == _expected(model)


def test_a_moved_number_is_still_set_and_reported():
    model = Scales()
    plan = _plan(model)
    plan.refill()
    model.load({"s2": -4.5})  # the float64 buffer only
    report = plan.refill()
    assert report.recapture_required == ["s2_max"]
    assert model.s2_max == -4.5 and _now(model) == _expected(model)
    model.load({"s1": 6.25, "rows": 8.0})  # two stages of the float32 buffer
    report = plan.refill()
    assert sorted(report.recapture_required) == ["rows_max", "s1_max"]
    assert _now(model) == _expected(model)


def test_nan_takes_the_per_target_compare_and_is_set_once():
    model = Scales()
    plan = _plan(model)
    model.load({"s0": float("nan")})
    assert plan.refill().recapture_required == ["s0_max"]
    assert plan.tensors.staged_if_changed(TARGETS) is not None  # NaN is never ==
    assert plan.refill().recapture_required == []  # the per-target compare: NaN as NaN


def test_targets_outside_whole_buffers_are_read_per_target():
    model = Scales()
    plan = _plan(model)
    plan.refill()
    part = ["s0_max"]  # one stage of the float32 buffer of three
    assert plan.tensors._rows_of(tuple(part)) is None
    assert plan.tensors.staged_if_changed(part) == plan.tensors.staged(part)  # the former read


def test_canary_a_compare_that_ignores_moved_numbers_leaves_them_stale(monkeypatch):
    """Planted bug: the per-buffer compare answers 'unchanged' always; the moved-number test's
    assertion goes red (the number is not set, no recapture reported)."""
    model = Scales()
    plan = _plan(model)
    plan.refill()
    monkeypatch.setattr(BoundTensors, "staged_if_changed", lambda self, targets: None)
    model.load({"s2": -4.5})
    report = plan.refill()
    assert report.recapture_required == [] and model.s2_max != -4.5  # red in the real test


def test_canary_a_compare_of_the_wrong_stages_is_caught(monkeypatch):
    """Planted bug: the per-buffer compare reads the float32 buffer against the entries in
    reversed order; equal numbers in another order read as a change (never as no change)."""
    model = Scales()
    plan = _plan(model)
    model.load({"s0": 1.0, "s1": 2.0, "rows": 3.0})
    plan.refill()
    rows = plan.tensors._rows_of(tuple(TARGETS))
    crossed = [(r, g, e[::-1]) if len(g) > 1 else (r, g, e) for r, g, e in rows]  # float32's
    plan.tensors._stage_rows[tuple(TARGETS)] = crossed
    assert plan.tensors.staged_if_changed(TARGETS) is not None
