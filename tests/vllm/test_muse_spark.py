"""Conformance with vLLM 0.33.0's own Muse Spark post-load code, which runs on CPU.

The model is the reference Muse Spark (examples/muse_spark.py) built from vLLM's real classes
where they run on CPU: ``MuseSpark1xNormPreservingResidualConnection`` (common/layers.py), the
NVIDIA ``MuseSpark1xMoE.fold_router_output_multiplier`` (nvidia/model.py), and vLLM's
``materialize_residual_path_constants`` as the post-load step. Adoption at compile is
bit-exact (tolerance 0), so the spec's formulas equal vLLM's values; A->B->A refills through
vLLM's own post-load step are bit-exact against cold starts, with 0 moved.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

pytest.importorskip("vllm")
pytestmark = [pytest.mark.vllm, pytest.mark.slow]  # importing vLLM's Muse Spark takes a while

from vllm.models.muse_spark.common import layers as vllm_layers  # noqa: E402
from vllm.models.muse_spark.nvidia.model import MuseSpark1xMoE as VllmMuseSpark1xMoE  # noqa: E402

from derivgraph import compile_plan, load_specs  # noqa: E402
from derivgraph.examples.muse_spark import (  # noqa: E402
    MuseSpark1xMoE,
    MuseSparkTextConfig,
    build_muse_spark,
    make_muse_weights,
)
from derivgraph.paths import get_path  # noqa: E402
from derivgraph.tools.forward_capture import capture  # noqa: E402

SPEC = Path(__file__).resolve().parents[2] / "specs" / "vllm_muse_spark.yaml"
CFG = MuseSparkTextConfig()
X = torch.randn(3, CFG.hidden_size, generator=torch.Generator().manual_seed(5))
ROUTERS = [f"model.layers.{i}.feed_forward.router.weight" for i in range(CFG.num_hidden_layers)]


class VllmFoldMoE(MuseSpark1xMoE):
    """The reference MoE with vLLM's own fold method (it reads only router, moe_router and
    router_output_multiplier, which the reference mirrors)."""

    fold_router_output_multiplier = VllmMuseSpark1xMoE.fold_router_output_multiplier


class VllmConnection(vllm_layers.MuseSpark1xNormPreservingResidualConnection):
    """vLLM's connection, with the gate in bf16 like the reference checkpoint."""

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.gate = torch.nn.Parameter(self.gate.detach().to(torch.bfloat16))


def _vllm_model(weights):
    return build_muse_spark(weights, moe_cls=VllmFoldMoE, connection_cls=VllmConnection,
                            post_load=vllm_layers.materialize_residual_path_constants)


@pytest.fixture(scope="module")
def weights():
    return {name: make_muse_weights(CFG, seed) for name, seed in (("A", 3), ("B", 4))}


def test_vllm_values_equal_the_reference_and_the_spec(weights):
    ours, theirs = build_muse_spark(weights["A"]), _vllm_model(weights["A"])
    assert isinstance(theirs.model.layers[0].add_attn,
                      vllm_layers.MuseSpark1xNormPreservingResidualConnection)
    for name, tensor in {**dict(theirs.named_parameters()),
                         **dict(theirs.named_buffers())}.items():
        assert torch.equal(get_path(ours, name), tensor), name
    # adoption is bit-exact: the formulas give vLLM's alpha/beta exactly
    plan = compile_plan(theirs, load_specs([SPEC]), require_match=True)
    assert all(e.adopted for e in plan.entries.values()) and len(plan) == 8
    # vLLM's fold on the loaded weight == derivgraph's fold formula
    for key in ROUTERS:
        loaded = weights["A"][key]
        assert torch.equal(plan.folds.entries[key].compute(loaded), get_path(theirs, key))
        assert torch.equal(get_path(theirs, key), loaded * CFG.output_multiplier)


def test_vllm_post_load_a_b_a_with_the_plan(weights):
    model = _vllm_model(weights["A"])
    plan = compile_plan(model, load_specs([SPEC]), require_match=True)
    graph = capture(model, X.clone())
    startup = {k: e.storage for k, e in plan.entries.items()}
    for name in ("B", "A", "B"):
        model.load_weights(weights[name])  # vLLM's materialize_residual_path_constants reruns
        report = plan.refill(verify=True)
        assert report.moved == [] and report.folded == ROUTERS
        cold = _vllm_model(weights[name])
        for tensor_name, tensor in {**dict(cold.named_parameters()),
                                    **dict(cold.named_buffers())}.items():
            assert torch.equal(get_path(model, tensor_name), tensor), (name, tensor_name)
        for key, obj in startup.items():
            assert get_path(model, key) is obj
        assert torch.equal(graph.replay(), capture(cold, X.clone()).replay())


def test_vllm_without_the_plan_leaves_the_reloaded_router_unfolded(weights):
    """vLLM 0.33.0's own behaviour: its fold is spent, so a reload is never folded."""
    model = _vllm_model(weights["A"])
    model.load_weights(weights["B"])
    cold = _vllm_model(weights["B"])
    for key in ROUTERS:
        assert torch.equal(get_path(model, key), weights["B"][key])
        assert not torch.equal(get_path(model, key), get_path(cold, key))
