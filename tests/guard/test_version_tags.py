"""The sweep with dict version tags: only the dicts whose tag moved are compared, the tags are
re-based after the restore's own stores, and a dict that does not hold exactly its snapshot
items keeps being compared. Each rule has a canary: planted away, a change goes unseen.

Every test here runs twice (tests/guard/conftest.py): with the tags where the interpreter proves
them, and with them forced off (today's sweeps of every container), with the same verdicts."""

from __future__ import annotations

import pytest
import torch

from derivgraph import addresses as addresses_module
from derivgraph.dict_versions import DictVersions
from derivgraph.guard import Change
from derivgraph.guard.sweep import Sweep
from tests.guard.test_guard import Layer, _reload, _startup
from tests.guard.test_value_templates import _dispatch
from tests.guard.test_value_templates import _startup as _linear_startup


@pytest.fixture
def tags_on(version_tags: bool) -> None:
    """Only with the tags: what the tags select, and canaries of bugs only the tags can have."""
    if not version_tags:
        pytest.skip("no version tags in this run (or none proven on this interpreter)")


def _blind_settle(monkeypatch: pytest.MonkeyPatch) -> None:
    """Planted bug: the tags are re-based after the restore without keeping the dicts that
    still differ from their snapshot (a slot left to a recapture, a harmless new value)."""

    def settle(self: Sweep, **_: bool) -> None:
        if self.tags is not None:
            self.tags.rebase()
            self.recheck = set()

    monkeypatch.setattr(Sweep, "settle", settle)


def _layout_changed(layer: Layer) -> None:
    layer.post_load()
    layer.kernel.workspace = torch.zeros(5)  # a new shape: reported, never restored


def test_tags_are_used_exactly_where_proven(version_tags: bool) -> None:
    layer = Layer()
    guard, _ = _startup(layer)
    sweep = guard.watch.sweep
    assert (sweep.tags is not None) is version_tags
    if version_tags:
        assert len(sweep.tags) == sum(k is not None for k in sweep.keys) > 4


def test_only_the_moved_dicts_are_compared_and_rebased_after_the_restores_stores(
        tags_on: None) -> None:
    layer = Layer()
    guard, kept = _startup(layer)
    sweep = guard.watch.sweep
    assert sweep.dirty() == (set(), []) and sweep.read == set()
    layer.kernel.workspace = kept["attribute"] * 3  # one store into the kernel's __dict__
    dirty, _ = sweep.dirty()
    kernel_dict = sweep.live.index(layer.kernel.__dict__)
    assert sweep.read == {kernel_dict} and dirty == {kernel_dict}
    report = guard.restore(layer)  # re-points the slot: a store into that dict again
    assert [c.path for c in report.restored] == ["kernel.workspace"]
    assert layer.kernel.workspace is kept["attribute"]
    assert sweep.tags.changed() == [] and sweep.recheck == set()
    assert sweep.dirty() == (set(), []) and sweep.read == set()


def test_a_reload_of_every_kind_is_restored_twice_in_a_row() -> None:
    layer = Layer()
    guard, kept = _startup(layer)
    rounds = []
    for seed in (1, 2):
        fresh = _reload(layer, seed)
        report = guard.restore(layer)
        assert report.ok, report.recapture
        rounds.append(sorted(c.path for c in report.restored))
        for name, t in kept.items():
            torch.testing.assert_close(t, fresh[name], rtol=0, atol=0)
    assert rounds[0] == rounds[1] and {"kernel.workspace", "inv"} <= set(rounds[0])
    assert guard.restore(layer).restored == []  # nothing moved since


def test_a_slot_left_to_a_recapture_is_reported_on_every_restore() -> None:
    layer = Layer()
    guard, _ = _startup(layer)
    _layout_changed(layer)
    for _ in range(3):
        report = guard.restore(layer)
        assert ("kernel.workspace", Change.LAYOUT) in {(c.path, c.change)
                                                       for c in report.recapture}


def test_canary_a_blind_rebase_forgets_the_slot_left_to_a_recapture(monkeypatch,
                                                                    tags_on) -> None:
    _blind_settle(monkeypatch)
    layer = Layer()
    guard, _ = _startup(layer)
    _layout_changed(layer)
    assert not guard.restore(layer).ok
    assert guard.restore(layer).recapture == []  # the planted bug: the change goes unseen


def _cell_turned_tensor(layer) -> None:
    """The harmless closure the engine assigned now captures a tensor (no dict store)."""
    layer.cpu_linear.__closure__[0].cell_contents = torch.ones(3)


def test_a_harmless_new_value_is_compared_again_on_every_restore() -> None:
    layer, guard = _linear_startup()
    _dispatch(layer, 5)  # a fresh closure of the same shape: harmless, not the snapshot value
    assert guard.restore(layer).ok
    assert guard.restore(layer).ok
    _cell_turned_tensor(layer)
    report = guard.restore(layer)
    assert [(c.path, c.change) for c in report.recapture] == [
        ("cpu_linear.closure.n", Change.NEW)]


def test_canary_a_blind_rebase_misses_the_tensor_in_the_harmless_value(monkeypatch,
                                                                       tags_on) -> None:
    _blind_settle(monkeypatch)
    layer, guard = _linear_startup()
    _dispatch(layer, 5)
    assert guard.restore(layer).ok
    _cell_turned_tensor(layer)
    assert guard.restore(layer).recapture == []


def test_canary_a_sweep_skipping_the_moved_dicts_misses_the_rebound_slot(monkeypatch,
                                                                         tags_on) -> None:
    layer = Layer()
    guard, kept = _startup(layer)
    monkeypatch.setattr(DictVersions, "changed", lambda self: [])  # planted: trusts stale tags
    _reload(layer, seed=1)
    report = guard.restore(layer)
    assert report.restored == [] and layer.kernel.workspace is not kept["attribute"]


def test_canary_an_address_sweep_that_always_agrees_misses_the_storage_swap(monkeypatch):
    layer = Layer()
    guard, kept = _startup(layer)
    monkeypatch.setattr(addresses_module, "_PTRS_EQUAL", lambda *args: True)
    ptr = kept["buffer"].data_ptr()
    kept["buffer"].data = kept["buffer"].clone()
    assert guard.restore(layer).restored == [] and kept["buffer"].data_ptr() != ptr
