"""The plugin's post-load hook registers vLLM's tp/dcp/ep groups before it compiles a plan.

vLLM's real model parallelism (gloo, world size 1, CPU) is initialized, so ``torch.distributed``
runs and a collective in a formula needs a registered group (DG040 otherwise). The synthetic
vLLM model is loaded through vLLM's own steps with the hooks installed and a spec whose
``_scale_inv`` formula goes through ``all_gather(..., group='tp')``: the plan compiles with no
user code; layerwise reloads A -> B -> A refill it, and a second initial load re-registers
the same groups (idempotent).
"""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

pytestmark = pytest.mark.vllm
pytest.importorskip("vllm")

from tests.fixtures import vllm_models as vm  # noqa: E402
from vllm_integration import groups, session  # noqa: E402

GATHERED = "all_gather(reciprocal(weight_scale), 0, group='tp')"


@pytest.fixture()
def collective_spec(tmp_path: Path) -> Path:
    text = vm.SPEC_PATH.read_text()
    assert "formula: reciprocal(weight_scale)}" in text
    path = tmp_path / "syn_collective.yaml"
    path.write_text(text.replace("formula: reciprocal(weight_scale)}", f'formula: "{GATHERED}"}}'))
    return path


def _layerwise(model: torch.nn.Module, weights: dict[str, torch.Tensor]) -> None:
    from vllm.model_executor.model_loader import reload

    reload.initialize_layerwise_reload(model)
    model.load_weights(weights.items())
    reload.finalize_layerwise_reload(model, vm.MODEL_CONFIG)


def test_hook_registers_groups_so_a_collective_formula_compiles(
        vllm_parallel, collective_spec: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from derivgraph.ops.collectives import get_group

    calls: list[dict[str, int]] = []
    real = groups.register_vllm_groups

    def spy() -> dict[str, int]:
        calls.append(real())
        return calls[-1]

    monkeypatch.setattr(groups, "register_vllm_groups", spy)
    with vm.derivgraph_hooks(specs=collective_spec):
        model = vm.build(vm.checkpoint(0))
        assert calls and calls[0] == {"tp": 1, "dcp": 1, "ep": 1}
        tp = vllm_parallel.get_tp_group().device_group
        assert get_group("tp") is tp and get_group("dcp") is vllm_parallel.get_dcp_group(
        ).device_group
        plan = session.plan_for(model)
        assert plan is not None, "the collective formula did not compile under the hook"
        key = "layers.0.proj._scale_inv"
        assert key in plan.entries and plan.entries[key].adopted
        startup = plan.entries[key].storage
        ptr = startup.data_ptr()

        for seed in (1, 0):  # A -> B -> A through vLLM's layerwise reload
            _layerwise(model, vm.checkpoint(seed))
            assert get_group("tp") is tp
            assert session.plan_for(model) is plan
            scale_inv = model.layers[0].proj._scale_inv
            assert scale_inv is startup and scale_inv.data_ptr() == ptr
            cold_scale = vm.checkpoint(seed)["layers.0.proj.weight_scale"]
            assert torch.equal(scale_inv, cold_scale.reciprocal())

        # another initial load in the same worker calls it again: the same groups, no error
        second = vm.build(vm.checkpoint(1))
        assert len(calls) == 2 and calls[1] == calls[0]
        assert get_group("tp") is tp
        assert session.plan_for(second) is not None and session.plan_for(model) is plan
        _layerwise(model, vm.checkpoint(1))  # the first model's plan still refills
        assert torch.equal(model.layers[0].proj._scale_inv,
                           second.layers[0].proj._scale_inv)


def test_without_the_registration_the_collective_plan_fails(
        vllm_parallel, collective_spec: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Canary: with the hook's call made a no-op, DG040 stops the plan (strict mode raises)."""
    from derivgraph import DerivgraphError
    from derivgraph.errors import CollectiveGroupError

    monkeypatch.setattr(groups, "register_vllm_groups", lambda: {})
    with vm.derivgraph_hooks(specs=collective_spec, mode="strict"):
        with pytest.raises((DerivgraphError, CollectiveGroupError), match="DG040"):
            vm.build(vm.checkpoint(0))
