"""DerivgraphWorkerExtension's RPCs, on a stand-in for vLLM's Worker (model_runner.get_model)."""

from __future__ import annotations

import pickle
from types import SimpleNamespace

import pytest
import torch

pytest.importorskip("vllm")

from tests.fixtures import vllm_models as vm  # noqa: E402
from vllm_integration.worker_extension import DerivgraphWorkerExtension  # noqa: E402

pytestmark = pytest.mark.vllm

A, B = vm.checkpoint(0), vm.checkpoint(1)


class Worker(DerivgraphWorkerExtension):
    """What vLLM's worker_base mixes the extension into: a Worker with a model runner."""

    def __init__(self, model: torch.nn.Module):
        self.model_runner = SimpleNamespace(get_model=lambda: model)


def _reload(model: torch.nn.Module, weights: dict) -> None:
    from vllm.model_executor.model_loader.reload import inplace

    inplace.reload_weights(vm.VLLM_CONFIG, model, iter(weights.items()), None, True)


def _mine(result: dict, model: torch.nn.Module) -> dict:
    rows = [m for m in result["models"] if m["model"] == type(model).__name__]
    assert rows, result
    return rows[0]


def test_rpcs_report_plan_counters_and_a_clean_audit():
    with vm.derivgraph_hooks():
        model = vm.build(A)
        worker = Worker(model)
        summary = worker.derivgraph_summary(rows=True)
        assert summary["mode"] == "refill" and summary["hooks_installed"]
        first = summary["models"][0]
        assert first["model"] == "SynModel" and first["derived"] == 39
        assert first["adopted"] == 39 and len(first["rows"]) == 39
        assert "syn-experts-constants" in first["specs"]
        _reload(model, B)
        _reload(model, A)
        counters = _mine(worker.derivgraph_counters(), model)
        audit = _mine(worker.derivgraph_audit(), model)
        refill = _mine(worker.derivgraph_refill(), model)
    assert counters["reloads"] == counters["refills"] == 2
    assert counters["moved_last"] == 0 and counters["tensors_written"] > 0
    assert counters["last"]["report"]["moved"] == []
    assert audit["moved"] == 0 and audit["undeclared"] == 0 and audit["tensors"] > 39
    assert not audit["baseline_taken_now"]  # taken before the first reload
    assert refill["moved"] == [] and refill["written"] > 0
    for result in (summary, counters, audit):  # collective_rpc pickles the results
        pickle.loads(pickle.dumps(result))


def test_audit_finds_what_refill_mode_does_not_check(monkeypatch):
    monkeypatch.setenv("DERIVGRAPH_GUARD", "0")  # the guard would undo the move
    monkeypatch.setattr(vm.SynFp8MoEMethod, "plant", True)
    with vm.derivgraph_hooks(mode="refill"):
        model = vm.build(A)
        worker = Worker(model)
        _reload(model, B)  # refill mode: no census, no error
        audit = _mine(worker.derivgraph_audit(), model)
        assert audit["moved"] == 2
        assert all(p.endswith("quant_method.planted_scale") for p in audit["moved_paths"])
        rebased = _mine(worker.derivgraph_audit(rebaseline=True), model)
        assert rebased["baseline_taken_now"] and rebased["moved"] == 0


def test_rpcs_without_a_plan():
    worker = Worker(torch.nn.Linear(2, 2))
    with vm.derivgraph_hooks(mode="off"):
        assert worker.derivgraph_summary()["mode"] == "off"
        assert worker.derivgraph_refill() == {"models": []}


def test_a_planned_model_is_freed_with_its_plan():
    import gc
    import weakref

    from vllm_integration import session

    with vm.derivgraph_hooks():
        model = vm.build(A)
        assert session.plan_for(model) is not None and model in session.planned_models()
        ref = weakref.ref(model)
        del model
        gc.collect()
    assert ref() is None
