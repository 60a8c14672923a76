"""One address check for the sources and the startup tensors before a run.

A run's source check and the entry's ``restore_storage`` (its first statement) both ask
:class:`~derivgraph.addresses.AtAddresses` whether tensors are at fixed addresses, with nothing
run between them. Where the storage words are proven, the source check asks once over both
lists (``Holders._at_addresses``) and ``restore_storage`` takes that run's proof, once. A
derived tensor the engine re-pointed (``t.data = new``) is still restored, with the words and
without them; a proof never outlives its run; a rebind makes a new joint check. Canaries are
recorded in ``benchmarks/results/refill57/NOTES.md``."""

from __future__ import annotations

from typing import Any

import pytest
import torch

from derivgraph import addresses as addresses_module
from derivgraph.addresses import AtAddresses
from tests.runtime.conftest import fast_path_on_off
from tests.runtime.test_flat_pass import _compiled, _wrong


@pytest.fixture(params=["words", "no-words"])
def words(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> bool:
    """Runs a test with the storage words proven, and again with them unavailable."""
    return fast_path_on_off(request, monkeypatch, addresses_module,
                            "the storage words are not proven on this torch build")


def _own_checks(plan: Any, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Records each run of the startup tensors' own address check."""
    calls: list[str] = []
    intact = AtAddresses.intact

    def spy(self: AtAddresses) -> bool:
        if self is plan.tensors.startup_addresses():
            calls.append("startup")
        return intact(self)

    monkeypatch.setattr(AtAddresses, "intact", spy)
    return calls


def _load(model: Any, seed: int) -> None:
    for layer in model:
        layer.load(seed)


def _own_checks_over_two_reloads(monkeypatch: pytest.MonkeyPatch) -> tuple[Any, list[str]]:
    """A compiled plan run once, then after two reloads with new weights (each run's values
    asserted right): the plan and the startup tensors' own address checks those runs made."""
    model, plan = _compiled()
    plan.run()
    calls = _own_checks(plan, monkeypatch)
    for seed in (3, 4):
        _load(model, seed)
        report = plan.run()
        assert report.restored == [] and _wrong(model) == []
    return plan, calls


def test_a_run_proves_the_startup_tensors_by_the_source_check(words, monkeypatch):
    _, calls = _own_checks_over_two_reloads(monkeypatch)
    # with the words, one joint gather answered for both; without, each check its own
    assert calls == ([] if words else ["startup", "startup"])


def test_a_repointed_derived_tensor_is_restored_again_and_again(words):
    model, plan = _compiled()
    plan.run()
    startup = model[5].total.data_ptr()
    for seed in (7, 8, 9):
        model[5].total.data = torch.zeros(8)
        _load(model, seed)
        report = plan.run()
        assert report.restored == ["5.total"]
        assert model[5].total.data_ptr() == startup
        assert _wrong(model) == []
    _load(model, 10)
    assert plan.run().restored == [] and _wrong(model) == []


def test_a_refill_restores_a_derived_tensor_repointed_before_it(words):
    model, plan = _compiled()
    plan.refill()
    startup = model[2].rw.data_ptr()
    model[2].rw.data = torch.zeros(8)
    _load(model, 5)
    report = plan.refill()
    assert report.restored == ["2.rw"] and model[2].rw.data_ptr() == startup
    assert _wrong(model) == []


def test_the_run_s_proof_is_taken_once(words):
    """After a run, a tensor re-pointed before a direct ``restore_storage`` is restored: the
    run's proof does not outlive it."""
    model, plan = _compiled()
    plan.run()
    plan.run()
    assert plan.tensors.at_startup is False
    startup = model[1].cp.data_ptr()
    model[1].cp.data = torch.zeros(8)
    assert plan.tensors.restore_storage() == ["1.cp"]
    assert model[1].cp.data_ptr() == startup


def test_a_moved_source_rebinds_and_the_joint_check_is_made_again(words, monkeypatch):
    model, plan = _compiled()
    plan.run()
    plan.run()
    model[4].w.data = torch.full((8,), 4.0)
    report = plan.run()
    assert any(r.startswith("4.w ") for r in report.recapture_required)
    assert _wrong(model) == []
    plan.run()  # the new checks' first use: each its own, then the joint's words taken
    calls = _own_checks(plan, monkeypatch)
    model[3].inv.data = torch.zeros(())
    _load(model, 6)
    report = plan.run()  # the joint check fails: the separate checks decide
    assert report.restored == ["3.inv"] and _wrong(model) == []
    assert calls == ["startup"]


def test_a_plan_above_the_joint_cap_checks_the_startup_tensors_on_their_own(words, monkeypatch):
    """Above ``JOINT_MAX`` startup tensors no joint check is built (its build would read every
    startup tensor once more at compile for one gather's fixed cost a run): each run's
    ``restore_storage`` asks the startup tensors' own check, and a re-pointed tensor is still
    restored."""
    from derivgraph.runtime import holders as holders_module

    monkeypatch.setattr(holders_module, "JOINT_MAX", 0)
    plan, calls = _own_checks_over_two_reloads(monkeypatch)
    assert calls == ["startup", "startup"]
    assert plan.holders._joint is None or plan.holders._joint[2] is None
