"""An owner on a source's path rebuilt by the engine (a new module with new parameters) is a
moved source: the eager run and the captured run read the new sources, never the old owner's.

The source check first proves every hop from the model to a source's owner unchanged; the
holder rebind of the same run reuses that sweep.
"""

from __future__ import annotations

from dataclasses import replace

import pytest
import torch

from derivgraph import compile_plan, load_specs
from derivgraph.errors import SourceChanged
from derivgraph.runtime.holders import Holders
from derivgraph.tools.reference_models import (
    RefConfig,
    RefMoE,
    build_reference_model,
    make_weights,
    reference_spec_path,
)

pytestmark = pytest.mark.usefixtures("dict_tags")  # with the version tags and without

CFG = RefConfig()
CONFIG = "layers.0.moe.quant_method.moe_quant_config"


def _compiled() -> tuple[torch.nn.Module, object]:
    model = build_reference_model(make_weights(CFG, 1))
    plan = compile_plan(model, load_specs([reference_spec_path()]), require_match=True)
    plan.run()
    return model, plan


def _rebuilt_moe(cfg: RefConfig = CFG, seed: int = 2) -> RefMoE:
    """A new layer-0 MoE module holding the values of another checkpoint."""
    weights = make_weights(cfg, seed)
    moe = RefMoE(cfg)
    with torch.no_grad():
        for name, param in moe.named_parameters():
            param.copy_(weights[f"layers.0.moe.{name}"])
    return moe


def _derived(plan: object, name: str) -> torch.Tensor:
    return plan.entries[f"{CONFIG}.{name}"].storage


@pytest.mark.parametrize("captured", [False, True])
def test_a_rebuilt_source_owner_is_a_moved_source(captured):
    model, plan = _compiled()
    if captured:
        plan.capture()
    old = model.layers[0].moe
    new = model.layers[0].moe = _rebuilt_moe()
    report = plan.run()
    assert {f"layers.0.moe.{n} (moved: graph recapture required)" for n in
            ("w13_input_scale", "w2_input_scale", "w13_weight_scale", "w2_weight_scale")} \
        <= set(report.recapture_required)
    assert torch.equal(_derived(plan, "_a1.alpha_or_gscale"), 1.0 / new.w13_input_scale)
    assert not torch.equal(_derived(plan, "_a1.alpha_or_gscale"), 1.0 / old.w13_input_scale)
    assert torch.equal(_derived(plan, "_w1.alpha_or_gscale"),
                       new.w13_weight_scale * new.w13_input_scale)
    again = plan.run()  # bound again under the new owner: nothing moved since
    assert again.recapture_required == []
    assert torch.equal(_derived(plan, "_a2.alpha_or_gscale"), 1.0 / new.w2_input_scale)


def test_canary_without_the_owner_check_the_old_sources_are_read(monkeypatch):
    monkeypatch.setattr(Holders, "owners_current", lambda self: True)  # the planted bug
    model, plan = _compiled()
    old = model.layers[0].moe
    model.layers[0].moe = _rebuilt_moe()
    report = plan.run()
    assert report.recapture_required == []
    assert torch.equal(_derived(plan, "_a1.alpha_or_gscale"), 1.0 / old.w13_input_scale)


def test_a_refused_rebuilt_owner_stays_refused_until_bound_again():
    model, plan = _compiled()
    model.layers[0].moe = _rebuilt_moe(replace(CFG, experts=CFG.experts * 2))
    for _ in range(2):  # the first refusal walked the owners: the second must not pass
        with pytest.raises(SourceChanged):
            plan.run()


def test_the_rebind_reuses_the_source_check_and_still_rebinds_rebuilt_holders(monkeypatch):
    model, plan = _compiled()
    model.load_weights(make_weights(CFG, 2))
    model.process_weights_after_loading()  # rebuilds quant configs, kernels, buffers
    sweeps = []
    current = Holders.owners_current
    monkeypatch.setattr(Holders, "owners_current",
                        lambda self: sweeps.append(1) or current(self))
    report = plan.run()
    assert len(sweeps) == 1  # the source check's sweep, not repeated by the rebind
    assert report.rebinds > 0 and plan.moved() == []
    assert model.layers[0].moe.quant_method.moe_quant_config._a1.alpha_or_gscale \
        is _derived(plan, "_a1.alpha_or_gscale")
    assert torch.equal(_derived(plan, "_a1.alpha_or_gscale"),
                       1.0 / model.layers[0].moe.w13_input_scale)
