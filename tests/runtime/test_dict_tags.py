"""The run's identity checks answered by the version tags of the dicts they read.

Owner hops, source holders and derived-tensor holders are checked item by item only in the
dicts whose tag moved; the plan settles the tags after its own stores, so a rebind does not
make later runs check again. Every behaviour test runs with the tags proven and with them
unavailable (``dict_tags``); the canaries plant a missing settle and a trusted moved tag.
"""

from __future__ import annotations

from typing import Any

import pytest
import torch
from torch import nn

from derivgraph import compile_plan
from derivgraph.runtime import watch
from derivgraph.runtime.watch import ItemWatch
from tests.runtime.test_refill_batched import SPEC, _check_against_cold, _stack


@pytest.fixture(autouse=True)
def _every_table_watched(monkeypatch: pytest.MonkeyPatch) -> None:
    """The test models' tables are small: watch them anyway (the threshold is for speed)."""
    monkeypatch.setattr(watch, "MIN_WATCHED", 0)


def test_small_tables_are_swept_not_watched(monkeypatch: pytest.MonkeyPatch) -> None:
    """Under :data:`MIN_WATCHED` items a table takes no watch (its direct sweep is the check)
    and still finds a rebuilt holder."""
    monkeypatch.setattr(watch, "MIN_WATCHED", 10_000)
    model, plan, startup = _compiled()
    holders = plan.holders
    assert holders.table.watch is None and holders.hops.watch is None
    assert holders._source_watch is None
    _rebuild_two(model)
    assert plan.run().rebinds == 2
    assert model.layers[0].inv is startup["layers.0.inv"]
    assert plan.moved() == []


class _Suspects:
    """Records how many items each watch handed to the per-item check, per call."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.counts: list[int] = []
        suspects = ItemWatch.suspects

        def spy(watch: ItemWatch) -> list[int]:
            out = suspects(watch)
            self.counts.append(len(out))
            return out

        monkeypatch.setattr(ItemWatch, "suspects", spy)


def _compiled(seed: int = 0) -> tuple[nn.Module, Any, dict[str, torch.Tensor]]:
    model = _stack(seed)
    plan = compile_plan(model, [SPEC])
    startup = {k: e.storage for k, e in plan.entries.items()}
    plan.run()
    plan.run()  # the first runs proved every item and took the snapshots
    return model, plan, startup


def _rebuild_two(model: nn.Module) -> None:
    """The engine rebuilds a parameter and an attribute of two layers."""
    model.layers[0].inv = nn.Parameter(model.layers[0].inv.detach().clone(), requires_grad=False)
    model.layers[3].strides = model.layers[3].strides.clone()


def test_a_rebuilt_holder_is_rebound_and_later_runs_check_no_item(dict_tags, monkeypatch):
    model, plan, startup = _compiled()
    _rebuild_two(model)
    spy = _Suspects(monkeypatch)
    assert plan.run().rebinds == 2
    assert model.layers[0].inv is startup["layers.0.inv"]
    assert model.layers[3].strides is startup["layers.3.strides"]
    assert "inv" in model.layers[0]._parameters
    if dict_tags:  # only the holders in the two mutated dicts were checked one by one
        assert 2 <= max(spy.counts) <= 8
    else:
        assert spy.counts == [] and plan.holders.table.watch is None
    spy.counts.clear()
    assert plan.run().rebinds == 0
    assert spy.counts == ([0, 0, 0] if dict_tags else [])  # hops, sources, holders: settled
    model.load(1)
    plan.run()
    _check_against_cold(model, startup, 1)
    assert plan.moved() == []


def test_a_dict_mutated_by_someone_else_is_checked(dict_tags):
    model, plan, startup = _compiled()
    layer = model.layers[1]
    layer.__dict__["note"] = "unrelated"  # moves the tag, holds nothing of ours
    layer.__dict__["wt"] = layer.wt.clone()  # a raw store, no Module.__setattr__
    assert plan.run().rebinds == 1
    assert layer.wt is startup["layers.1.wt"]
    layer._buffers["sq"] = layer.sq.clone()  # and into a registry
    assert plan.run().rebinds == 1
    assert layer.sq is startup["layers.1.sq"] and plan.moved() == []


def test_a_storage_swap_of_a_derived_tensor_is_restored(dict_tags):
    model, plan, startup = _compiled()
    held = model.layers[2].sq
    ptr = held.data_ptr()
    held.data = torch.zeros(6)  # no dict changes: only the address sweep sees it
    model.load(1)
    report = plan.run()
    assert report.restored == ["layers.2.sq"] and held.data_ptr() == ptr
    _check_against_cold(model, startup, 1)


def test_a_storage_swap_of_a_source_is_a_moved_source(dict_tags):
    model, plan, startup = _compiled()
    fresh = 0.25 + torch.rand(6)
    model.layers[2].scale.data = fresh.clone()  # same object, other storage
    report = plan.run()
    assert "layers.2.scale (moved: graph recapture required)" in report.recapture_required
    assert torch.equal(model.layers[2].inv, 1.0 / fresh)
    assert plan.run().recapture_required == []  # bound to the new storage since


def test_a_source_replaced_in_its_registry_is_a_moved_source(dict_tags):
    model, plan, startup = _compiled()
    fresh = 0.25 + torch.rand(6)
    model.layers[1].scale = nn.Parameter(fresh.clone(), requires_grad=False)
    report = plan.run()
    assert "layers.1.scale (moved: graph recapture required)" in report.recapture_required
    assert torch.equal(model.layers[1].inv, 1.0 / fresh)
    assert model.layers[1].inv is startup["layers.1.inv"]


def test_a_rebuilt_owner_is_walked_again(dict_tags):
    """A rebuilt layer (new module, new parameters): a moved source, and its holders bound
    into the new layer."""
    model, plan, startup = _compiled()
    new = _stack(5).layers[2]
    model.layers[2] = new
    report = plan.run()
    assert "layers.2.scale (moved: graph recapture required)" in report.recapture_required
    assert new.inv is startup["layers.2.inv"] and torch.equal(new.inv, 1.0 / new.scale)
    assert plan.run().rebinds == 0
    assert sorted(plan.moved()) == ["layers.2.scale", "layers.2.weight"]  # since compile


def test_canary_without_the_settle_after_its_own_stores_every_later_run_is_dirty(monkeypatch):
    """The planted bug: the snapshot is never taken again after the plan's own rebind."""
    if not _tags():
        pytest.skip("no PEP 509 version tags on this interpreter")
    model, plan, _startup = _compiled()
    monkeypatch.setattr(ItemWatch, "settle", lambda self: None)
    _rebuild_two(model)
    plan.run()
    spy = _Suspects(monkeypatch)
    for _ in range(2):
        assert plan.run().rebinds == 0
    assert max(spy.counts) >= 2  # red against the settled [0, 0, 0] of the test above


def test_canary_a_trusted_moved_tag_leaves_the_engine_holders(monkeypatch):
    """The planted bug: a dict whose tag moved is taken as unchanged."""
    if not _tags():
        pytest.skip("no PEP 509 version tags on this interpreter")
    model, plan, startup = _compiled()
    monkeypatch.setattr(ItemWatch, "suspects", lambda self: self.always)
    _rebuild_two(model)
    assert plan.run().rebinds == 0
    assert model.layers[0].inv is not startup["layers.0.inv"]  # red: left as the engine built
    assert sorted(plan.moved()) == ["layers.0.inv", "layers.3.strides"]  # verify still sees


def _tags() -> bool:
    from derivgraph import dict_versions

    return dict_versions.AVAILABLE
