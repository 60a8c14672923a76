"""Double-fold detection: an engine that folds on every load, with a fold spec that assumes it
folds only once, is caught before the pass folds the weight a second time."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest
import torch

from derivgraph import compile_plan, load_specs
from derivgraph.errors import FoldReappliedError, Rule
from derivgraph.examples.muse_spark import (
    MuseSpark1xMoE,
    MuseSparkTextConfig,
    build_muse_spark,
    make_muse_weights,
)
from derivgraph.guard.refold import LoadWitness, check_refolds
from derivgraph.paths import get_path

ROOT = Path(__file__).resolve().parents[2]
CFG = MuseSparkTextConfig()
ROUTER = "model.layers.0.feed_forward.router.weight"


class EveryLoadMoE(MuseSpark1xMoE):
    """Folds on every load (its multiplier is kept privately), yet reads as spent."""

    def __init__(self, config: MuseSparkTextConfig):
        super().__init__(config)
        self._multiplier = config.output_multiplier

    def fold_router_output_multiplier(self) -> None:
        with torch.no_grad():
            self.router.weight.mul_(self._multiplier)
        self.router_output_multiplier = None
        self.moe_router.router_output_multiplier = None


@pytest.fixture(scope="module")
def weights():
    return make_muse_weights(CFG, 1), make_muse_weights(CFG, 2)


def _setup(weights):
    a, b = weights
    model = build_muse_spark(a, moe_cls=EveryLoadMoE)
    plan = compile_plan(model, load_specs([ROOT / "specs" / "vllm_muse_spark.yaml"]))
    assert ROUTER in plan.folds.entries  # the spec binds: the engine's fold looks spent
    return model, plan, b


def _reload(model, witness, b):
    model.load_weights(dict(witness.record(b.items())))


def test_canary_without_the_check_the_weight_is_folded_twice(weights):
    model, plan, b = _setup(weights)
    model.load_weights(b)
    plan.refill(verify=True)
    twice = b[ROUTER] * CFG.output_multiplier * CFG.output_multiplier
    torch.testing.assert_close(get_path(model, ROUTER), twice)


def test_default_warns_and_folds_once(weights, caplog):
    model, plan, b = _setup(weights)
    witness = LoadWitness(plan)
    _reload(model, witness, b)
    assert ROUTER in witness.loaded
    with caplog.at_level(logging.WARNING, logger="vllm"):
        ids = check_refolds(plan, witness)
    assert ROUTER in ids and len(ids) == CFG.num_hidden_layers
    assert "DG083" in caplog.text and ROUTER in caplog.text
    report = plan.refill(verify=True)
    assert ROUTER in report.folds_skipped and ROUTER not in report.folded
    cold = build_muse_spark(b, moe_cls=EveryLoadMoE)
    assert torch.equal(get_path(model, ROUTER), get_path(cold, ROUTER))


def test_strict_raises_before_writing(weights):
    model, plan, b = _setup(weights)
    witness = LoadWitness(plan)
    _reload(model, witness, b)
    before = get_path(model, ROUTER).clone()
    with pytest.raises(FoldReappliedError) as info:
        check_refolds(plan, witness, strict=True)
    assert info.value.issues[0].rule is Rule.ENGINE_REFOLDED
    assert torch.equal(get_path(model, ROUTER), before)


def test_an_engine_whose_fold_is_spent_is_not_flagged(weights):
    a, b = weights
    model = build_muse_spark(a)  # vLLM 0.33.0's NVIDIA model: folds on the first load only
    plan = compile_plan(model, load_specs([ROOT / "specs" / "vllm_muse_spark.yaml"]))
    witness = LoadWitness(plan)
    _reload(model, witness, b)
    assert check_refolds(plan, witness, strict=True) == []
    report = plan.refill(verify=True)
    assert ROUTER in report.folded
    assert torch.equal(get_path(model, ROUTER), get_path(build_muse_spark(b), ROUTER))
