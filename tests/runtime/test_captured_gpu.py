"""The captured pass on CUDA: capture once, reload B, A, B by replay only (``pytest -m gpu``)."""

from __future__ import annotations

import pytest
import torch

from derivgraph import compile_plan, load_specs
from derivgraph.planner import bits_equal
from derivgraph.tools.forward_capture import capture
from derivgraph.tools.reference_models import (
    RefConfig,
    build_reference_model,
    make_weights,
    reference_spec_path,
)

pytestmark = pytest.mark.gpu
CFG = RefConfig(layers=4)


def test_captured_pass_replays_reloads_bit_exact_with_cold_start():
    x = torch.randn(8, CFG.hidden, device="cuda", generator=torch.Generator("cuda").manual_seed(3))
    weights = {k: {n: t.cuda() for n, t in make_weights(CFG, seed).items()}
               for k, seed in (("A", 1), ("B", 2))}
    cold = {}
    for k, w in weights.items():
        cold_model = build_reference_model(w, "cuda", CFG)
        cold[k] = capture(cold_model, x.clone()).replay().clone()
    assert not torch.equal(cold["A"], cold["B"])
    model = build_reference_model(weights["A"], "cuda", CFG)
    plan = compile_plan(model, load_specs([reference_spec_path()]), require_match=True)
    plan.capture()
    forward = capture(model, x.clone())
    startup = {k: (e.storage, e.startup_ptr) for k, e in plan.entries.items()}
    peak = []
    for name in ("B", "A", "B"):
        model.load_weights(weights[name])  # the engine's loader: in place
        torch.cuda.synchronize()
        torch.cuda.reset_peak_memory_stats()
        base = torch.cuda.memory_allocated()
        report = plan.run(verify=True)
        peak.append(torch.cuda.max_memory_allocated() - base)
        assert report.replayed and report.moved == []
        assert torch.equal(forward.replay(), cold[name]), name
        for key, (obj, ptr) in startup.items():
            assert plan.entries[key].storage is obj and obj.data_ptr() == ptr
    assert peak == [0, 0, 0]  # the replay allocates nothing
    values = plan.evaluate()
    for key, entry in plan.entries.items():
        if isinstance(entry.storage, torch.Tensor) and key in values:
            assert bits_equal(entry.storage, values[key]), key
