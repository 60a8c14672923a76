"""One address check after a run for the holders' storages and a later check's tensors.

A verified run ends with :meth:`Holders.moved`, whose fast path asks whether every holder's
storage is at its startup address. Where the run's ``after`` names other tensors that a later
check of the same reload needs at fixed addresses (the plugin passes the guard's startup
tensors), the one :class:`~derivgraph.addresses.AtAddresses` over both lists answers: when it
passes, :attr:`Holders.after_checked` is the run's report; when it fails, the holders' own check
decides and ``after`` stays unproven. With the storage words and without them. Canaries are
recorded in ``benchmarks/results/reload62/NOTES.md``."""

from __future__ import annotations

from typing import Any

import pytest
import torch

from derivgraph import addresses as addresses_module
from derivgraph.addresses import AtAddresses
from derivgraph.runtime.holders import Holders
from derivgraph.runtime.report import RunReport
from tests.runtime.conftest import fast_path_on_off
from tests.runtime.test_flat_pass import _compiled, _wrong


@pytest.fixture(params=["words", "no-words"])
def words(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> bool:
    """Runs a test with the storage words proven, and again with them unavailable."""
    return fast_path_on_off(request, monkeypatch, addresses_module,
                            "the storage words are not proven on this torch build")


def _with_after() -> tuple[Any, Any, list[torch.Tensor], AtAddresses]:
    """A compiled plan run once, and two tensors outside it to pass its runs as ``after``."""
    model, plan = _compiled()
    plan.run()
    outside = [torch.arange(6.0), torch.zeros(3, 2).t()]
    after = AtAddresses(outside, [t.data_ptr() for t in outside], hold=True)
    return model, plan, outside, after


def _slow_path(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Counts :meth:`Holders.moved`'s per-entry walks (the holders not proven by the sweeps)."""
    walks: list[int] = []
    not_scalars = Holders._not_scalars
    monkeypatch.setattr(Holders, "_not_scalars", lambda self: walks.append(1) or not_scalars(self))
    return walks


def test_a_verified_run_proves_the_after_tensors(words, monkeypatch):
    model, plan, _outside, after = _with_after()
    walks = _slow_path(monkeypatch)
    for _ in range(3):
        report = plan.run(verify=True, after=after)
        assert report.moved == [] and _wrong(model) == []
        assert plan.holders.after_checked is report
    assert walks == []
    # a proof never outlives its run: a check without a run proves nothing for later
    assert plan.moved() == []
    assert plan.holders.after_checked is None
    assert after.intact()


def test_a_repointed_after_tensor_is_left_to_its_owner(words, monkeypatch):
    model, plan, outside, after = _with_after()
    plan.run(verify=True, after=after)
    walks = _slow_path(monkeypatch)
    startup = outside[0].untyped_storage()
    outside[0].data = torch.arange(6.0)  # the same values at another address
    report = plan.run(verify=True, after=after)
    assert plan.holders.after_checked is None
    assert not after.intact()
    # the plan's own tensors are still proven by the holders' own check, and not moved
    assert report.moved == [] and walks == [] and _wrong(model) == []
    outside[0].set_(startup, 0, (6,), (1,))  # put back: proven again by the next run
    report = plan.run(verify=True, after=after)
    assert plan.holders.after_checked is report


def test_a_moved_derived_tensor_is_still_reported(words):
    model, plan, _outside, after = _with_after()
    plan.run(verify=True, after=after)
    model[5].total.data = torch.zeros(8)  # re-pointed after the run: moved() must see it
    report = RunReport(mode="refill")
    assert plan.holders.moved(plan.source_ptrs, report, after) == ["5.total"]
    assert plan.holders.after_checked is None
    report = plan.run(verify=True, after=after)  # restore_storage puts it back
    assert report.restored == ["5.total"] and report.moved == []
    assert plan.holders.after_checked is report


def test_without_after_the_holders_check_alone(words):
    model, plan = _compiled()
    plan.run()
    report = plan.run(verify=True)
    assert report.moved == [] and plan.holders.after_checked is None
    # nothing to join: the holders' own check
    report = plan.run(verify=True, after=AtAddresses([], []))
    assert report.moved == [] and plan.holders.after_checked is None
