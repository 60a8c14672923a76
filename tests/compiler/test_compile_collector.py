"""The cyclic collector around a compile: paused while it runs (where it was on), and after a
compile that returns a plan, the objects made meanwhile are promoted to the oldest generation
without a walk (``derivgraph.collector.promote_survivors``, the one rule the static audit's
scan follows too), so the next young collections do not walk the plan's objects twice.

Each test starts from a full collection (every generation's count at 0), so without the
promotion the plan is found in a young generation. Canaries: no promotion (the plan stays
young); a promotion that ignores a caller's frozen objects (they are thawed); a promotion
after a compile that raised; a promotion where the caller had the collector off.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator

import pytest
from torch import nn

import derivgraph.planner as planner
from derivgraph import DerivedTensor, Spec, Target
from derivgraph.errors import SpecValidationError
from derivgraph.planner import compile_plan
from derivgraph.tools.bench_scaling import scaling_model, scaling_spec


def _held_in(generation: int, obj: object) -> bool:
    return any(o is obj for o in gc.get_objects(generation=generation))


@pytest.fixture()
def collector() -> Iterator[None]:
    """The collector on, after a full collection; restored as found."""
    was = gc.isenabled()
    gc.enable()
    gc.collect()
    try:
        yield
    finally:
        (gc.enable if was else gc.disable)()


def test_the_plan_is_promoted_to_the_oldest_generation(collector: None) -> None:
    plan = compile_plan(scaling_model(3), [scaling_spec()])
    assert gc.isenabled()
    assert _held_in(2, plan) and not _held_in(0, plan) and not _held_in(1, plan)
    assert _held_in(2, plan.entries) and gc.get_freeze_count() == 0


def test_a_callers_frozen_objects_stay_frozen(collector: None) -> None:
    gc.freeze()
    try:
        frozen = gc.get_freeze_count()
        assert frozen > 0
        plan = compile_plan(scaling_model(3), [scaling_spec()])
        assert gc.get_freeze_count() == frozen  # nothing thawed into the oldest generation
        assert not _held_in(2, plan)  # nothing promoted: young, as without the rule
        assert gc.isenabled()
    finally:
        gc.unfreeze()


def test_a_compile_that_raises_promotes_nothing(collector: None,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[None] = []
    monkeypatch.setattr(planner, "promote_survivors", lambda: calls.append(None))
    bad = Spec(name="bad", target=Target(module_class=["ScalingLayer"]),
               derived=[DerivedTensor(name="inv", kind="attribute", formula="1.0 / nowhere")])
    with pytest.raises(SpecValidationError):
        compile_plan(scaling_model(2), [bad])
    assert calls == [] and gc.isenabled()
    compile_plan(scaling_model(2), [scaling_spec()])
    assert calls == [None]  # the spy is the compile's rule


def test_a_caller_with_the_collector_off_keeps_it_off(collector: None) -> None:
    gc.disable()
    plan = compile_plan(scaling_model(3), [scaling_spec()])
    assert not gc.isenabled()
    assert _held_in(0, plan)  # left where it was made: the caller collects when it likes


def test_the_scan_and_the_compile_share_the_rule() -> None:
    from derivgraph.audit.static import scan
    from derivgraph.collector import promote_survivors

    assert scan.promote_survivors is promote_survivors is planner.promote_survivors
    assert isinstance(scaling_model(1), nn.Module)
