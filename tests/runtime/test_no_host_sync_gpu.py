"""``plan.run()`` never synchronizes with the host (README, "Python API"), checked on CUDA.

``torch.cuda.set_sync_debug_mode("error")`` makes every synchronizing CUDA call (``.item()``,
a device-to-host copy, ``nonzero``, a blocking ``cudaMemcpy``) raise, so a pass that waits for
the GPU fails here. Eager, selective and captured runs after an in-place reload; ``pytest -m gpu``.
torch calls the mode a prototype that "does not yet detect all synchronizing operations", so a
pass is evidence, not proof; a ``.item()`` planted at the top of ``Plan.run`` turns the three
run tests red (H200, ``benchmarks/results/review39/h200/planted.log``).
"""

from __future__ import annotations

import pytest
import torch

from derivgraph import compile_plan, load_specs
from derivgraph.tools import reference_models as ref
from tests.runtime.test_captured_gpu import CFG  # the 4-layer reference model of the gpu tests

pytestmark = pytest.mark.gpu


def _plan(capture: bool):
    weights = {seed: {n: t.cuda() for n, t in ref.make_weights(CFG, seed).items()}
               for seed in (1, 2)}
    model = ref.build_reference_model(weights[1], "cuda", CFG)
    plan = compile_plan(model, load_specs([ref.reference_spec_path()]), require_match=True)
    if capture:
        plan.capture()
    plan.run()  # first run: anything lazy happens here, as in a deployment's warm-up
    return model, plan, weights


@pytest.fixture
def no_sync():
    torch.cuda.synchronize()
    torch.cuda.set_sync_debug_mode("error")
    try:
        yield
    finally:
        torch.cuda.set_sync_debug_mode("default")


def test_the_canary_sync_raises(no_sync) -> None:
    with pytest.raises(RuntimeError, match="synchroniz"):
        torch.ones(1, device="cuda").item()


@pytest.mark.parametrize("capture", [False, True], ids=["eager", "captured"])
def test_run_after_a_reload_never_waits_for_the_gpu(capture: bool) -> None:
    model, plan, weights = _plan(capture)
    for seed in (2, 1):
        model.load_weights(weights[seed])  # the engine's loader, in place
        torch.cuda.synchronize()
        torch.cuda.set_sync_debug_mode("error")
        try:
            report = plan.run()
        finally:
            torch.cuda.set_sync_debug_mode("default")
        torch.cuda.synchronize()
        assert report.replayed == capture


def test_selective_run_never_waits_for_the_gpu() -> None:
    model, plan, weights = _plan(False)
    model.load_weights(weights[2])
    torch.cuda.synchronize()
    torch.cuda.set_sync_debug_mode("error")
    try:
        plan.run(updated=["layers.0."])
    finally:
        torch.cuda.set_sync_debug_mode("default")
