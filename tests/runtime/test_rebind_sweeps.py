"""The rebind's sweeps: every rebuilt holder found in one read, proofs reused only where valid.

A run's rebind finds the holders the engine rebuilt in one C-level sweep
(:func:`derivgraph.runtime.accessors.changes`), not a check followed by a second read and a
third comparison; a refill whose targets are every holder (in any order) and found them all
rebuilt re-binds without a stale sweep; the rebind reuses the owner-hop check of its own run
only. Each shortcut has a canary: the planted bug it guards against goes red.
"""

from __future__ import annotations

from typing import Any

import pytest
import torch
from torch import nn

from derivgraph import DerivedTensor, Spec, Target, compile_plan
from derivgraph.runtime.accessors import HolderTable, HopTable, changes
from derivgraph.runtime.engine import RefillTable
from derivgraph.runtime.holders import Holders
from tests.runtime.test_refill_batched import (
    KERNEL_SPEC,
    SPEC,
    _check_against_cold,
    _stack,
)
from tests.toy import Toy

pytestmark = pytest.mark.usefixtures("dict_tags")  # with the version tags and without


class _Counted:
    """An iterator over ``items`` that counts what was read."""

    def __init__(self, items: list[bool]):
        self.items, self.read = iter(items), 0

    def __iter__(self) -> _Counted:
        return self

    def __next__(self) -> bool:
        item = next(self.items)
        self.read += 1
        return item


@pytest.mark.parametrize(("sweep", "expected"), [
    ([True] * 5, []), ([False, True, True], [0]), ([True, False, True, False, False], [1, 3, 4]),
    ([True, True, False], [2]), ([], [])])
def test_changes_reads_each_item_once_and_finds_every_change(sweep, expected):
    counted = _Counted(sweep)
    assert changes(counted, len(sweep)) == expected
    assert counted.read == len(sweep)  # one pass, every item: none skipped, none re-read


def _rebuild_first_middle_last(model: nn.Module) -> None:
    """The engine rebuilds three holders of 16: the table's first, a middle and the last."""
    first, middle, last = model.layers[0], model.layers[2], model.layers[3]
    first.inv = nn.Parameter(first.inv.detach().clone(), requires_grad=False)
    middle.register_buffer("sq", middle.sq.clone(), persistent=False)
    last.strides = last.strides.clone()


def _no_second_read(monkeypatch: pytest.MonkeyPatch,
                    refused_reads: tuple[tuple[type, str], ...] = (
                        (HolderTable, "intact"), (HolderTable, "current"),
                        (HolderTable, "stale"))) -> None:
    def refused(*args: Any) -> None:
        raise AssertionError("the rebind read the holders or owners a second time")

    for cls, name in refused_reads:
        monkeypatch.setattr(cls, name, refused)


def _run_then_rebuilt() -> tuple[nn.Module, Any, dict[str, torch.Tensor]]:
    """A stack after one run, then three of its holders rebuilt by the engine."""
    model = _stack(0)
    plan = compile_plan(model, [SPEC])
    startup = {k: e.storage for k, e in plan.entries.items()}
    plan.run()
    _rebuild_first_middle_last(model)
    return model, plan, startup


def test_a_run_rebinds_every_rebuilt_holder_from_one_sweep(monkeypatch):
    model, plan, startup = _run_then_rebuilt()
    _no_second_read(monkeypatch)
    report = plan.run()
    assert report.rebinds == 3
    monkeypatch.undo()
    assert plan.moved() == []
    for key, tensor in startup.items():
        layer, name = key.split(".")[1], key.split(".")[2]
        assert getattr(model.layers[int(layer)], name) is tensor, key
    assert "inv" in model.layers[0]._parameters and "sq" in model.layers[2]._buffers
    assert plan.run().rebinds == 0  # nothing rebuilt: the sweep finds nothing


def test_canary_a_sweep_that_stops_at_the_first_change_leaves_holders_rebuilt(monkeypatch):
    """The planted bug: the rebind's sweep stops where ``all()`` would (the first change)."""
    model, plan, startup = _run_then_rebuilt()
    monkeypatch.setattr(HolderTable, "changed", lambda self: changes(
        map(lambda a, b: a is b, map(dict.get, self.dicts, self.keys), self.storages),
        len(self.dicts))[:1])
    assert plan.run().rebinds == 1
    assert model.layers[2].sq is not startup["layers.2.sq"]  # red: left as the engine built it
    assert sorted(plan.moved()) == ["layers.2.sq", "layers.3.strides"]


def test_a_refill_whose_targets_are_every_holder_in_another_order_sweeps_no_stale(
        monkeypatch, per_entry_spy):
    model = _stack(0)
    plan = compile_plan(model, [SPEC])
    startup = {k: e.storage for k, e in plan.entries.items()}
    plan.refill()
    table = plan._refill_table
    assert table.index != list(range(len(plan.holders.table)))  # int64 targets sorted last
    assert table.whole
    per_entry_spy.clear()
    for seed in (1, 0):
        model.load(seed)
        model.post_load()
        # the refill reads every holder once (current); its rebind neither compares them
        # again (stale) nor re-checks the owners its own source check proved (the hop sweep)
        _no_second_read(monkeypatch, ((HolderTable, "intact"), (HolderTable, "stale"),
                                      (HopTable, "intact")))
        report = plan.refill()
        monkeypatch.undo()
        assert report.taken_from_engine == 16 and report.rebinds == 16
        assert plan.moved() == []
        _check_against_cold(model, startup, seed)
    assert per_entry_spy == []


ALIASED = Spec(name="layer", target=Target(module_class=["Layer"]), derived=[
    *SPEC.derived, DerivedTensor(name="scale_alias", kind="alias", of="scale")])


def test_canary_a_table_taken_as_whole_when_a_holder_is_no_target_miscounts(monkeypatch):
    """An alias's holder is in the holder table but no refill target: ``whole`` is False and
    the rebind counts the 16 holders the engine rebuilt. The planted bug (``whole`` forced on)
    re-binds the untouched alias too and reports it as rebuilt: red."""
    model = _stack(0)
    plan = compile_plan(model, [ALIASED])
    plan.refill()
    assert len(plan.holders.table) == 20 and not plan._refill_table.whole
    model.load(1)
    model.post_load()
    assert plan.refill().rebinds == 16
    plan._refill_table.whole = True  # the planted bug
    model.load(0)
    model.post_load()
    assert plan.refill().rebinds == 20  # red: 4 holders the engine never touched counted


def test_whole_is_every_holder_exactly_once():
    model = _stack(0)
    plan = compile_plan(model, [SPEC])
    table = plan.holders.table
    ids = [e.node.id for e in table.entries]
    every = RefillTable(table, ids[::-1], set(), set())
    assert every.whole and every.complete
    assert not RefillTable(table, ids[1:], set(), set()).whole
    assert not RefillTable(table, [*ids[1:], ids[1]], set(), set()).whole  # a repeat, one short


def _kernel_plan() -> tuple[Toy, Any, dict[str, torch.Tensor]]:
    model = Toy()
    model.post_load()
    plan = compile_plan(model, [KERNEL_SPEC])
    plan.refill()
    return model, plan, {k: e.storage for k, e in plan.entries.items()}


def _fail_after_the_source_check(monkeypatch: pytest.MonkeyPatch, plan: Any) -> None:
    """A refill that proved the owners current, then failed before its rebind."""
    def failing(report: Any) -> None:
        raise RuntimeError("a planted failure after the source check")

    monkeypatch.setitem(plan.bindings, "take_engine_values", failing)
    with pytest.raises(RuntimeError, match="planted"):
        plan.refill()
    monkeypatch.undo()


def test_an_owner_check_is_reused_by_its_own_run_only(monkeypatch):
    model, plan, startup = _kernel_plan()
    model.load(5)
    model.post_load()
    _fail_after_the_source_check(monkeypatch, plan)
    model.post_load()  # the engine rebuilt the kernel after that check
    assert plan.rebind() == 2
    assert model.kernel.strides is startup["kernel.strides"]
    assert model.kernel.desc.gscale is startup["kernel.desc.gscale"]
    assert plan.moved() == []


def test_canary_an_owner_check_reused_across_runs_binds_into_the_old_kernel(monkeypatch):
    """The planted bug: the owner proof of a failed run is taken for the next call's."""
    model, plan, startup = _kernel_plan()
    model.load(5)
    model.post_load()
    _fail_after_the_source_check(monkeypatch, plan)
    model.post_load()
    monkeypatch.setattr(Holders, "_checked_by",
                        lambda self, report, checked: checked is not None
                        and checked[1] is self.hops)
    plan.rebind()
    assert model.kernel.strides is not startup["kernel.strides"]  # red: the engine's tensor
    monkeypatch.undo()
    assert sorted(plan.moved()) == ["kernel.desc.gscale", "kernel.strides"]
