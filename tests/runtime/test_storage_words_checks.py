"""The plan's run-time address checks by storage words (:mod:`derivgraph.addresses`).

A derived tensor the engine re-pointed (``t.data = new``) and a source it moved (``p.data =
new``) are found with the words proven (one gather, then the exact addresses) and without them
(the address sweep alone), and the source words keep no storage alive. Canaries: a planted
gather that always agrees hides each move (red)."""

from __future__ import annotations

import gc
import weakref

import pytest
import torch

from derivgraph import addresses as addresses_module
from tests.runtime.conftest import fast_path_on_off
from tests.runtime.test_flat_pass import _compiled, _wrong


@pytest.fixture(params=["words", "no-words"])
def words(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> bool:
    """Runs a test with the storage words proven, and again with them unavailable."""
    return fast_path_on_off(request, monkeypatch, addresses_module,
                            "the storage words are not proven on this torch build")


@pytest.fixture
def compiled_always_kept(monkeypatch: pytest.MonkeyPatch):
    """A compiled model run once, then the planted bug: a gather that always agrees, and no
    address compare after it (skipped where the words are not proven)."""
    if not addresses_module.AVAILABLE:
        pytest.skip("the storage words are not proven on this torch build")
    model, plan = _compiled()
    plan.run()
    monkeypatch.setattr(addresses_module.Addresses, "kept", lambda self: True)
    return model, plan


def test_a_repointed_derived_tensor_is_restored(words):
    model, plan = _compiled()
    plan.run()
    plan.run()  # the words are taken by a check that compared the addresses
    assert (plan.tensors.startup_addresses().words is not None) == words
    startup = model[5].total.data_ptr()
    model[5].total.data = torch.zeros(8)
    for layer in model:
        layer.load(7)
    report = plan.run()
    assert report.restored == ["5.total"]
    assert model[5].total.data_ptr() == startup
    assert _wrong(model) == []
    assert plan.run().restored == []  # the words agree again once restored


def test_canary_a_gather_that_always_agrees_hides_a_repointed_tensor(compiled_always_kept):
    model, plan = compiled_always_kept
    model[5].total.data = torch.zeros(8)
    for layer in model:
        layer.load(7)
    assert plan.run().restored == []
    assert "5.total" in _wrong(model)


def test_a_moved_source_is_found_and_read_at_its_new_address(words):
    model, plan = _compiled()
    plan.run()
    plan.run()
    assert (plan.holders._source_checks[2].words is not None) == words
    model[4].w.data = torch.full((8,), 4.0)
    report = plan.run()
    assert any(r.startswith("4.w ") for r in report.recapture_required)
    assert _wrong(model) == []
    assert torch.equal(model[4].rw, torch.full((8,), 0.25))


def test_canary_a_gather_that_always_agrees_hides_a_moved_source(compiled_always_kept):
    model, plan = compiled_always_kept
    model[4].w.data = torch.full((8,), 4.0)
    report = plan.run()
    assert not any(r.startswith("4.w ") for r in report.recapture_required)
    assert "4.rw" in _wrong(model)


def test_the_source_words_keep_no_dropped_storage_alive(words):
    """An engine that drops a source's old storage frees it: only the pass's own flat groups
    hold what they address, so the check is made on a source no group reads by address."""
    model, plan = _compiled(flat_groups=False)
    plan.run()
    old = model[4].w.untyped_storage()
    gone = weakref.ref(old)
    del old
    model[4].w.data = torch.full((8,), 4.0)
    gc.collect()
    holders = plan.holders
    assert not holders.sources_intact()  # the check ran over the moved source
    if words:
        source_words = holders._source_checks[2].words
        assert source_words is not None and source_words.storages == []
    assert gone() is None  # nothing else holds it: not the words either
