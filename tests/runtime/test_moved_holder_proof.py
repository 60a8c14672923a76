"""``run(verify=True)``'s ``moved()`` reuses the run's own proof that every holder is back.

A run whose hop check swept every hop (no version tag trusted), whose refill read every holder
of the table and whose rebind stored the startup object into each stale one by a dict store
(none left to the per-entry path) has proven what ``moved()``'s two identity sweeps (hops,
holders) check: only ``moved()`` runs after that rebind. So the verify step skips those two
sweeps for that run, once; the address check of the holders' storages always runs. A plain
``plan.moved()``, a later check with the same report, a run that left a holder to the per-entry
path or a run whose hop check trusted the tags sweeps again. The canaries plant a proof that
outlives its run, and one taken although a holder went to the per-entry path (on the per-entry
run and on a run whose batched read passed).
"""

from __future__ import annotations

from typing import Any

import pytest
import torch

from derivgraph import compile_plan
from derivgraph.runtime import watch as watch_module
from derivgraph.runtime.accessors import HolderTable
from derivgraph.runtime.holders import Holders
from tests.runtime.test_rebind_sweeps import ALIASED
from tests.runtime.test_refill_batched import SPEC, _check_against_cold, _stack


def _sweeps(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Records every reference identity sweep of the holders (``HolderTable.intact``)."""
    calls: list[str] = []
    intact = HolderTable.intact

    def spy(self, current=None):  # noqa: ANN001, ANN202
        calls.append("holders")
        return intact(self, current)

    monkeypatch.setattr(HolderTable, "intact", spy)
    return calls


def _refilled() -> tuple[Any, Any, dict[str, torch.Tensor]]:
    model = _stack(0)
    plan = compile_plan(model, [SPEC])
    startup = {k: e.storage for k, e in plan.entries.items()}
    model.load(1)
    model.post_load()  # the engine rebuilt every holder
    return model, plan, startup


def test_a_refill_that_rebound_every_holder_skips_the_sweeps_once(monkeypatch):
    monkeypatch.setattr(watch_module, "MIN_WATCHED", 10**9)  # every check a full sweep
    model, plan, startup = _refilled()
    sweeps = _sweeps(monkeypatch)
    report = plan.refill(verify=True)
    assert report.moved == [] and report.rebinds == 16 and sweeps == []
    _check_against_cold(model, startup, 1)
    model.layers[2].wt = model.layers[2].wt.clone()  # after the run: the proof is used up
    assert plan.holders.moved(plan.source_ptrs, report) == ["layers.2.wt"]
    assert plan.moved() == ["layers.2.wt"] and sweeps == ["holders", "holders"]


def test_a_hop_check_that_trusted_the_tags_proves_nothing(monkeypatch):
    monkeypatch.setattr(watch_module, "MIN_WATCHED", 0)  # every table watched by its tags
    model, plan, startup = _refilled()
    if plan.holders.hops is None or plan.holders.hops.watch is None:
        pytest.skip("no PEP 509 version tags on this interpreter")
    sweeps = _sweeps(monkeypatch)
    assert plan.refill(verify=True).moved == [] and sweeps == ["holders"]
    _check_against_cold(model, startup, 1)


def test_a_holder_left_to_the_per_entry_path_proves_nothing(monkeypatch, per_entry_spy):
    monkeypatch.setattr(watch_module, "MIN_WATCHED", 10**9)
    model, plan, startup = _refilled()
    layer = model.layers[0]
    del layer.inv  # the engine now keeps `inv` as a plain attribute, not a parameter
    layer.inv = (1.0 / layer.scale).clone()
    sweeps = _sweeps(monkeypatch)
    report = plan.refill(verify=True)
    assert report.moved == [] and layer.inv is startup["layers.0.inv"]
    assert "layers.0.inv" in per_entry_spy and sweeps == ["holders"]
    _check_against_cold(model, startup, 1)


def test_a_derived_tensor_re_pointed_after_the_rebind_is_still_moved(monkeypatch):
    """The address check is never skipped: a ``.data =`` after the run's storage restore."""
    monkeypatch.setattr(watch_module, "MIN_WATCHED", 10**9)
    model, plan, _startup = _refilled()
    rebind = plan.programs.helpers["rebind"]
    assert plan.bindings["rebind"] is rebind

    def rebind_then_re_point(report=None):  # noqa: ANN001, ANN202
        count = rebind(report)
        model.layers[3].sq.data = torch.zeros(6)  # same object, another storage
        return count

    monkeypatch.setitem(plan.bindings, "rebind", rebind_then_re_point)
    assert plan.refill(verify=True).moved == ["layers.3.sq"]


def _proof_taken_with_a_rest(self: Holders, stale: Any, current: Any, report: Any,
                             every: bool = False) -> int:
    """Planted: ``_rebind_stale`` taking the proof although a holder went per entry."""
    count = _REBIND_STALE(self, stale, current, report, every)
    self._rebound = (report, self.table)
    return count


_REBIND_STALE = Holders._rebind_stale


@pytest.mark.parametrize("planted", [False, True], ids=["fixed", "canary"])
def test_canary_a_proof_taken_with_a_holder_left_behind(planted, monkeypatch):
    """A holder the per-entry rebind cannot put back (its owner gone from the walk) is moved;
    a proof taken for that run would hide it."""
    monkeypatch.setattr(watch_module, "MIN_WATCHED", 10**9)
    model, plan, _startup = _refilled()
    if planted:
        monkeypatch.setattr(Holders, "_rebind_stale", _proof_taken_with_a_rest)
    rebind_entries = Holders.rebind_entries

    def left_behind(self, entries, report=None, known=None):  # noqa: ANN001, ANN202
        entries = [e for e in entries if e.id != "layers.0.inv"]  # this one cannot be put back
        return rebind_entries(self, entries, report, known)

    monkeypatch.setattr(Holders, "rebind_entries", left_behind)
    layer = model.layers[0]
    del layer.inv  # the engine now keeps `inv` as a plain attribute: the per-entry path
    layer.inv = (1.0 / layer.scale).clone()
    moved = plan.refill(verify=True).moved
    assert moved == ([] if planted else ["layers.0.inv"])


@pytest.mark.parametrize("planted", [False, True], ids=["fixed", "canary"])
def test_canary_a_proof_that_outlives_its_verify(planted, monkeypatch):
    monkeypatch.setattr(watch_module, "MIN_WATCHED", 10**9)
    model, plan, _startup = _refilled()
    report = plan.refill(verify=True)
    if planted:  # the verify does not use the proof up
        monkeypatch.setattr(Holders, "moved", lambda self, ptrs, rep=None: (
            _MOVED(self, ptrs, rep), setattr(self, "_rebound", (report, self.table)))[0])
    assert plan.holders.moved(plan.source_ptrs, report) == []
    model.layers[1].wt = model.layers[1].wt.clone()
    moved = plan.holders.moved(plan.source_ptrs, report)
    assert moved == ([] if planted else ["layers.1.wt"])


_MOVED = Holders.moved


def _proof_despite_a_rest(self: Holders, stale: Any, current: Any, report: Any,
                          every: bool = False) -> int:
    """Planted: ``_rebind_stale`` taking the proof whenever the run's reads were full sweeps,
    ignoring the holders it left to the per-entry path."""
    count = _REBIND_STALE(self, stale, current, report, every)
    self._rebound = self._swept_in_full(report, current, self.table)
    return count


@pytest.mark.parametrize("planted", [False, True], ids=["fixed", "canary"])
def test_canary_a_read_run_with_a_holder_left_to_the_per_entry_path_proves_nothing(
        planted, monkeypatch):
    """The refill's targets are a subset of the holder table (an alias is held but never
    written), so its batched take and read succeed although the alias's holder is gone: the
    rebind gets the read (``current``) and leaves that holder to the per-entry path, which
    here cannot put it back. That run proves nothing; a proof taken anyway hides the holder."""
    monkeypatch.setattr(watch_module, "MIN_WATCHED", 10**9)  # every check a full sweep
    model = _stack(0)
    plan = compile_plan(model, [ALIASED])
    plan.refill()
    model.load(1)
    model.post_load()
    if planted:
        monkeypatch.setattr(Holders, "_rebind_stale", _proof_despite_a_rest)
    rebind_entries, handed = Holders.rebind_entries, []

    def left_behind(self, entries, report=None, known=None):  # noqa: ANN001, ANN202
        entries = list(entries)
        handed.extend(e.id for e in entries)
        entries = [e for e in entries if e.id != "layers.0.scale_alias"]
        return rebind_entries(self, entries, report, known)

    monkeypatch.setattr(Holders, "rebind_entries", left_behind)
    del model.layers[0].scale_alias  # no refill target: the take and the read still pass
    report = plan.refill(verify=True)
    assert report.taken_from_engine == 16 and handed == ["layers.0.scale_alias"]
    assert report.moved == ([] if planted else ["layers.0.scale_alias"])
