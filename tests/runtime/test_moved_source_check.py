"""``run(verify=True)``'s ``moved()`` reuses the run's own source check (checked once per run).

Between the run's source check (before its pass) and ``moved()`` only the pass, the refill's
copies and the rebind run: they write derived tensors and their holders, never a source. So the
verify step trusts that check instead of sweeping every source again, but only for the run that
made it and only once: a plain ``plan.moved()``, a later check, or a run whose check failed (and
re-bound its sources) checks the sources again. The canaries plant a proof that outlives its run.
"""

from __future__ import annotations

from typing import Any

import pytest
import torch
from torch import nn

from derivgraph import compile_plan
from derivgraph.runtime.holders import Holders
from tests.runtime.test_refill_batched import SPEC, _stack


def _counting(plan: Any, monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    calls: list[Any] = []
    check = plan.holders.sources_intact
    monkeypatch.setattr(plan.holders, "sources_intact",
                        lambda report=None: (calls.append(report), check(report))[1])
    return calls


def _swap_weight(model: Any) -> str:
    """The engine re-points a source at a new tensor of the same layout and value."""
    layer = model.layers[1]
    layer.weight = nn.Parameter(layer.weight.detach().clone(), requires_grad=False)
    return "layers.1.weight"


def test_a_verified_refill_checks_the_sources_once(monkeypatch):
    model = _stack(0)
    plan = compile_plan(model, [SPEC])
    plan.refill(verify=True)
    calls = _counting(plan, monkeypatch)
    for seed in (1, 0):
        model.load(seed)
        model.post_load()
        report = plan.refill(verify=True)
        assert report.moved == [] and report.rebinds == 16
    assert len(calls) == 2 and all(c is not None for c in calls)  # one per run, the run's own
    assert plan.moved() == [] and len(calls) == 3  # a plain moved() checks again


def test_a_source_moved_before_the_run_is_reported_by_its_verify(monkeypatch):
    model = _stack(0)
    plan = compile_plan(model, [SPEC])
    plan.refill(verify=True)
    calls = _counting(plan, monkeypatch)
    path = _swap_weight(model)
    model.post_load()
    report = plan.refill(verify=True)
    assert path in report.moved
    assert any(path in r for r in report.recapture_required)
    assert len(calls) == 2  # the run's check failed (sources re-bound): verify checks again


def _proof_outlives_its_run(holders: Holders, source_ptrs: Any, report: Any = None) -> list[str]:
    """A planted bug: trusts any source check ever passed, by any run, any number of times."""
    intact = holders._sources_checked is not None or holders.sources_intact()
    paths = holders._startup_sources(source_ptrs)[1] if intact else source_ptrs
    return [p for p in paths if id(_get(holders.model, p)) != source_ptrs[p][0]]


def _get(model: Any, path: str) -> Any:
    from derivgraph.paths import get_path

    return get_path(model, path)


@pytest.mark.parametrize("planted", [False, True], ids=["fixed", "canary"])
def test_a_run_s_proof_does_not_outlive_it(planted, monkeypatch):
    model = _stack(0)
    plan = compile_plan(model, [SPEC])
    report = plan.refill()  # no verify: its passed source check is not used up
    assert plan.holders._sources_checked is report
    if planted:
        monkeypatch.setattr(Holders, "moved", lambda self, ptrs, report=None:
                            _proof_outlives_its_run(self, ptrs, report))
    path = _swap_weight(model)
    found = [plan.moved(), plan.holders.moved(plan.source_ptrs, report)]
    if planted:  # the planted bug misses the source the engine re-pointed after the run
        assert found == [[], []]
        return
    assert all(path in f for f in found)


def test_the_run_s_proof_is_used_up_by_its_verify():
    model = _stack(0)
    plan = compile_plan(model, [SPEC])
    model.load(1)
    model.post_load()
    report = plan.refill(verify=True)
    assert report.moved == [] and plan.holders._sources_checked is None
    path = _swap_weight(model)
    assert path in plan.holders.moved(plan.source_ptrs, report)  # the same report: checked
    assert torch.equal(model.layers[1].weight, plan.tensors.sources[path])


class _EngineParameter(nn.Parameter):
    """An engine's parameter subclass answering every torch call through Python (as vLLM's
    ``BasevLLMParameter`` does): the source check must see its address all the same."""

    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        return super().__torch_function__(func, types, args, kwargs or {})


def _subclassed(model: Any) -> None:
    for layer in model.layers:
        layer.weight = _EngineParameter(layer.weight.detach(), requires_grad=False)


@pytest.mark.parametrize("subclass", [False, True])
def test_a_source_pointed_at_other_storage_in_place_fails_the_source_check(subclass):
    """The same source object, its data moved (``.data =``): not intact (the address sweep)."""
    model = _stack(0)
    if subclass:
        _subclassed(model)
    plan = compile_plan(model, [SPEC])
    plan.refill(verify=True)
    assert plan.holders.sources_intact()
    weight = model.layers[1].weight
    weight.data = weight.detach().clone()
    assert model.layers[1].weight is weight
    assert not plan.holders.sources_intact()
    assert "layers.1.weight" in plan.moved()


def test_canary_an_address_sweep_that_always_agrees_misses_the_moved_data(monkeypatch):
    from derivgraph import addresses

    monkeypatch.setattr(addresses, "addresses_equal", lambda *args: True)  # planted
    model = _stack(0)
    plan = compile_plan(model, [SPEC])
    plan.refill(verify=True)
    weight = model.layers[1].weight
    weight.data = weight.detach().clone()
    assert plan.holders.sources_intact()  # the planted bug: the moved data goes unseen
