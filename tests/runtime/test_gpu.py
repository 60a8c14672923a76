"""Real CUDA graphs: replay after reloads matches a cold start (run with ``pytest -m gpu``)."""

from __future__ import annotations

import pytest
import torch

from derivgraph import compile_plan, load_specs
from derivgraph.tools.demo import run_demo
from derivgraph.tools.forward_capture import capture
from derivgraph.tools.reference_models import (
    RefConfig,
    build_reference_model,
    make_weights,
    reference_spec_path,
)

pytestmark = pytest.mark.gpu
CFG = RefConfig()


def _cuda_weights(seed):
    return {k: v.cuda() for k, v in make_weights(CFG, seed).items()}


def _cold(weights, x):
    graph = capture(build_reference_model(weights, "cuda"), x.clone())
    assert isinstance(graph._graph, torch.cuda.CUDAGraph)
    return graph.replay().clone()


def test_cuda_graph_replay_after_reloads_matches_cold_start():
    x = torch.randn(8, CFG.hidden, device="cuda", generator=torch.Generator("cuda").manual_seed(1))
    weights = {"A": _cuda_weights(1), "B": _cuda_weights(2)}
    cold = {k: _cold(w, x) for k, w in weights.items()}
    assert not torch.equal(cold["A"], cold["B"])

    naive = build_reference_model(weights["A"], "cuda")
    naive_graph = capture(naive, x.clone())
    naive.load_weights(weights["B"])
    naive.process_weights_after_loading()
    naive_out = naive_graph.replay()
    assert not torch.equal(naive_out, cold["B"])  # stale or freed tensors read by the graph

    model = build_reference_model(weights["A"], "cuda")
    plan = compile_plan(model, load_specs([reference_spec_path()]), require_match=True)
    graph = capture(model, x.clone())
    for name in ("B", "A", "B", "A"):
        model.load_weights(weights[name])
        model.process_weights_after_loading()
        report = plan.refill(verify=True)
        assert report.moved == []
        out = graph.replay()
        assert torch.equal(out, cold[name]), name
        # the same reload through the recompute pass alone
        model.load_weights(weights[name])
        assert plan.run(verify=True).moved == []
        assert torch.equal(graph.replay(), cold[name]), name


def test_demo_on_cuda():
    result = run_demo("cuda")
    assert result.ok()
    assert result.naive.moved > 0 and result.naive.max_abs_err > 0.0
