"""MoE layers whose post-load step builds vLLM's REAL quant configs and experts objects,
reloaded through vLLM's real layerwise reload with the plugin and the BUILT-IN spec library.

Each layer is shaped like vLLM's ``RoutedExperts``: checkpoint-format parameters with weight
loaders, created by a ``QuantizeMethodBase`` subclass whose ``process_weights_after_loading``
converts to kernel format and calls ``make_fp8_moe_quant_config`` /
``make_nvfp4_moe_quant_config`` and ``make_*_moe_kernel`` (``CutlassExpertsFp8``,
``FlashInferExperts``, ``TrtLlmFp8ExpertsMonolithic``), as vLLM's quant methods do. A layerwise
reload (initialize -> load_weights -> finalize) reruns that step on temporaries and rebuilds the
quant config and the experts; the objects a graph captured at startup would read (references
kept from before the reload) must end up holding the new values in their startup storage.
Strict mode proves nothing else moved.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import pytest
import torch
from torch import nn

pytest.importorskip("vllm")

from vllm.model_executor.layers.fused_moe.activation import MoEActivation  # noqa: E402
from vllm.model_executor.layers.fused_moe.config import (  # noqa: E402
    FusedMoEConfig,
    FusedMoEParallelConfig,
    RoutingMethodType,
)
from vllm.model_executor.layers.fused_moe.experts.cutlass_moe import (  # noqa: E402
    CutlassExpertsFp8,
)
from vllm.model_executor.layers.fused_moe.experts.flashinfer_cutlass_moe import (  # noqa: E402
    FlashInferExperts,
)
from vllm.model_executor.layers.fused_moe.experts.trtllm_fp8_moe import (  # noqa: E402
    TrtLlmFp8ExpertsMonolithic,
)
from vllm.model_executor.layers.fused_moe.oracle.fp8 import (  # noqa: E402
    Fp8MoeBackend,
    make_fp8_moe_kernel,
    make_fp8_moe_quant_config,
)
from vllm.model_executor.layers.fused_moe.oracle.nvfp4 import (  # noqa: E402
    NvFp4MoeBackend,
    make_nvfp4_moe_kernel,
    make_nvfp4_moe_quant_config,
)
from vllm.model_executor.layers.quantization.base_config import (  # noqa: E402
    QuantizeMethodBase,
)
from vllm.model_executor.model_loader.weight_utils import default_weight_loader  # noqa: E402
from vllm.model_executor.utils import replace_parameter, set_weight_attrs  # noqa: E402

from derivgraph.paths import get_path  # noqa: E402
from tests.fixtures import vllm_models as vm  # noqa: E402
from vllm_integration import session  # noqa: E402

pytestmark = [pytest.mark.vllm, pytest.mark.slow]

E, H, N = 4, 256, 128
QC, FE = "quant_method.moe_quant_config", "quant_method.moe_kernel.fused_experts"
SWIGLU = {"swiglu_limit": 7.0, "swiglu_alpha": 1.702, "swiglu_beta": 1.0}
# what strict mode found missing from the built-in library (see the file's comments)


@pytest.fixture(scope="module", autouse=True)
def _cpu_accelerator():
    """TRT-LLM experts ask the accelerator for a device index (no driver here): use the CPU
    (vllm-0.33-on-cpu.md §2). Kept for the whole module: reloads rebuild the experts."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(torch.accelerator, "current_device_index", lambda: "cpu")
        yield


# ---- checkpoints (checkpoint format: per-expert input scales) ---------------------------------

def _pos(g: torch.Generator, shape: tuple[int, ...], lo: float, hi: float) -> torch.Tensor:
    return lo + (hi - lo) * torch.rand(shape, generator=g)


def fp8_ckpt(seed: int) -> dict[str, torch.Tensor]:
    g = torch.Generator().manual_seed(seed)
    return {
        "w13_weight": (0.5 * torch.randn((E, 2 * N, H), generator=g)).to(torch.float8_e4m3fn),
        "w2_weight": (0.5 * torch.randn((E, H, N), generator=g)).to(torch.float8_e4m3fn),
        "w13_weight_scale": _pos(g, (E,), 0.01, 0.03),
        "w2_weight_scale": _pos(g, (E,), 0.01, 0.03),
        "w13_input_scale": _pos(g, (E,), 0.5, 1.5),
        "w2_input_scale": _pos(g, (E,), 0.5, 1.5),
    }


def nvfp4_ckpt(seed: int) -> dict[str, torch.Tensor]:
    g = torch.Generator().manual_seed(seed)
    u8 = {"dtype": torch.uint8, "generator": g}
    return {
        "w13_weight": torch.randint(0, 256, (E, 2 * N, H // 2), **u8),
        "w2_weight": torch.randint(0, 256, (E, H, N // 2), **u8),
        "w13_weight_scale": _pos(g, (E, 2 * N, H // 16), 0.5, 2.0).to(torch.float8_e4m3fn),
        "w2_weight_scale": _pos(g, (E, H, N // 16), 0.5, 2.0).to(torch.float8_e4m3fn),
        "w13_weight_scale_2": _pos(g, (E,), 1e-3, 3e-3),
        "w2_weight_scale_2": _pos(g, (E,), 1e-3, 3e-3),
        "w13_input_scale": _pos(g, (E,), 0.5, 1.5),
        "w2_input_scale": _pos(g, (E,), 0.5, 1.5),
    }


# ---- a RoutedExperts-shaped layer and vLLM-style quant methods --------------------------------

class _MoEMethod(QuantizeMethodBase):
    """Holds what vLLM's FusedMoEMethodBase holds; creates checkpoint-format parameters."""

    def __init__(self, moe: FusedMoEConfig, backend: Any, experts_cls: type,
                 ckpt: dict[str, torch.Tensor]):
        self.moe, self.backend, self.experts_cls = moe, backend, experts_cls
        self.shapes = {n: (t.shape, t.dtype) for n, t in ckpt.items()}
        self.moe_quant_config = None
        self.moe_kernel = None

    def create_weights(self, layer: nn.Module, *args, **kwargs) -> None:
        for name, (shape, dtype) in self.shapes.items():
            p = nn.Parameter(torch.empty(shape, dtype=dtype), requires_grad=False)
            set_weight_attrs(p, {"weight_loader": default_weight_loader})
            layer.register_parameter(name, p)

    def apply(self, layer: nn.Module, *args, **kwargs) -> torch.Tensor:
        raise NotImplementedError("the kernels need a GPU")


class Fp8MoEMethod(_MoEMethod):
    """Fp8MoEMethod: one activation scale for all experts, then _init_moe_kernel."""

    def process_weights_after_loading(self, layer: nn.Module) -> None:
        replace_parameter(layer, "w13_input_scale", layer.w13_input_scale.max())
        replace_parameter(layer, "w2_input_scale", layer.w2_input_scale.max())
        self.moe_quant_config = make_fp8_moe_quant_config(
            fp8_backend=self.backend, w1_scale=layer.w13_weight_scale,
            w2_scale=layer.w2_weight_scale, a1_scale=layer.w13_input_scale,
            a2_scale=layer.w2_input_scale, block_shape=None, per_act_token_quant=False,
            swiglu_limit=layer.swiglu_limit, gemm1_alpha=layer.swiglu_alpha,
            gemm1_beta=layer.swiglu_beta, layer=layer)
        self.moe_kernel = make_fp8_moe_kernel(
            moe_quant_config=self.moe_quant_config, moe_config=self.moe,
            fp8_backend=self.backend, experts_cls=self.experts_cls,
            routing_tables=layer._expert_routing_tables())


class ModelOptNvFp4FusedMoE(_MoEMethod):
    """ModelOptNvFp4FusedMoE._build_moe_kernel, then the experts' own post-load step."""

    def process_weights_after_loading(self, layer: nn.Module) -> None:
        self.moe_quant_config = make_nvfp4_moe_quant_config(
            backend=self.backend, w13_scale=layer.w13_weight_scale,
            w2_scale=layer.w2_weight_scale, w13_scale_2=layer.w13_weight_scale_2,
            w2_scale_2=layer.w2_weight_scale_2, a13_scale=layer.w13_input_scale,
            a2_scale=layer.w2_input_scale, swiglu_limit=layer.swiglu_limit,
            swiglu_alpha=layer.swiglu_alpha, swiglu_beta=layer.swiglu_beta, layer=layer)
        self.moe_kernel = make_nvfp4_moe_kernel(
            moe_quant_config=self.moe_quant_config, moe_config=self.moe,
            experts_cls=self.experts_cls, backend=self.backend,
            routing_tables=layer._expert_routing_tables(), per_token_activation=False)
        self.moe_kernel.fused_experts.process_weights_after_loading(layer)  # folds a13 in place


class RoutedExperts(nn.Module):
    """Where vLLM's RoutedExperts keeps weights, scales, moe_config and quant_method."""

    def __init__(self, moe: FusedMoEConfig, method: _MoEMethod):
        super().__init__()
        self.moe_config, self.local_num_experts = moe, moe.num_local_experts
        self.activation = moe.activation
        self.swiglu_limit, self.swiglu_alpha = moe.swiglu_limit, moe.swiglu_alpha
        self.swiglu_beta = moe.swiglu_beta
        self.quant_method = method
        method.create_weights(self)

    def _expert_routing_tables(self) -> None:
        return None


class MoEModel(vm.SynModel):
    """One MoE layer; SynModel's load_weights (params by name, through their weight_loader)."""

    def __init__(self, layer: RoutedExperts):
        nn.Module.__init__(self)
        self.layers = nn.ModuleList([layer])

    def process_weights_after_loading(self) -> None:  # no model-level step here
        return None


# ---- the cases --------------------------------------------------------------------------------

@dataclass
class Case:
    id: str
    method: type
    backend: Any
    experts_cls: type
    ckpt: Callable[[int], dict[str, torch.Tensor]]
    specs: set[str]
    # paths (from the layer) of startup holders whose values a captured graph reads
    watch: list[str]
    weight_valued: bool = True  # False: config constants (only storage identity matters)
    moe: dict[str, Any] = field(default_factory=dict)


CASES = [
    Case("fp8-flashinfer-cutlass", Fp8MoEMethod, Fp8MoeBackend.FLASHINFER_CUTLASS,
         FlashInferExperts, fp8_ckpt,
         {"vllm-fp8-flashinfer-cutlass-per-tensor", "vllm-flashinfer-cutlass-gemm1-clamp-limit"},
         [f"{QC}._a1.alpha_or_gscale", f"{QC}._a2.alpha_or_gscale", f"{QC}._w1.alpha_or_gscale",
          f"{FE}.gemm1_clamp_limit"], moe={"swiglu_limit": 7.0}),
    Case("fp8-trtllm-monolithic", Fp8MoEMethod, Fp8MoeBackend.FLASHINFER_TRTLLM,
         TrtLlmFp8ExpertsMonolithic, fp8_ckpt, {"vllm-trtllm-fp8-per-tensor-gated"},
         [f"{FE}._g1_alphas", f"{FE}._g2_alphas", f"{FE}._g1_scale_c"]),
    Case("fp8-cutlass", Fp8MoEMethod, Fp8MoeBackend.VLLM_CUTLASS, CutlassExpertsFp8, fp8_ckpt,
         {"vllm-cutlass-fp8-strides"},
         [f"{FE}.ab_strides1", f"{FE}.ab_strides2", f"{FE}.c_strides1", f"{FE}.c_strides2"],
         weight_valued=False),
    Case("nvfp4-flashinfer-cutlass", ModelOptNvFp4FusedMoE, NvFp4MoeBackend.FLASHINFER_CUTLASS,
         FlashInferExperts, nvfp4_ckpt,
         {"vllm-nvfp4-moe-quant-config", "vllm-nvfp4-moe-quant-config-block-scales",
          "vllm-flashinfer-cutlass-gemm1-clamp-limit"},
         [f"{QC}._a1.alpha_or_gscale", f"{QC}._a2.alpha_or_gscale", f"{QC}._w1.alpha_or_gscale",
          f"{FE}.gemm1_clamp_limit"],
         moe={**SWIGLU, "activation": MoEActivation.SWIGLUOAI_UNINTERLEAVE}),
]


def _build(case: Case, seed: int) -> MoEModel:
    moe = FusedMoEConfig(
        num_experts=E, experts_per_token=2, hidden_dim=H, intermediate_size=N,
        num_local_experts=E, num_logical_experts=E, device="cpu",
        routing_method=RoutingMethodType.Renormalize,
        moe_parallel_config=FusedMoEParallelConfig.make_no_parallel(),
        in_dtype=torch.bfloat16, **{"activation": MoEActivation.SILU, **case.moe})
    ckpt = case.ckpt(seed)
    model = MoEModel(RoutedExperts(moe, case.method(moe, case.backend, case.experts_cls, ckpt)))
    from vllm.model_executor.model_loader import utils
    from vllm.model_executor.model_loader.reload import record_metadata_for_reloading

    record_metadata_for_reloading(model)
    model.load_weights((f"layers.0.{k}", v) for k, v in ckpt.items())
    utils.process_weights_after_loading(model, vm.MODEL_CONFIG, torch.device("cpu"))
    return model


def _reload(model: MoEModel, case: Case, seed: int) -> None:
    from vllm.model_executor.model_loader import reload

    reload.initialize_layerwise_reload(model)
    model.load_weights((f"layers.0.{k}", v) for k, v in case.ckpt(seed).items())
    reload.finalize_layerwise_reload(model, vm.MODEL_CONFIG)


@pytest.fixture(scope="module")
def cold():
    """Cold starts of A (seed 0) and B (seed 1) per case, without derivgraph."""
    with vm.derivgraph_hooks(enabled=False):
        return {(c.id, s): _build(c, s) for c in CASES for s in (0, 1)}


def _value(model: nn.Module, path: str) -> torch.Tensor:
    return get_path(model.layers[0], path)


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_layerwise_reload_refills_the_startup_quant_config_and_experts(case, cold):
    with vm.derivgraph_hooks(mode="strict", specs=None):  # the built-in specs alone
        model = _build(case, 0)
        plan = session.plan_for(model)
        assert case.specs <= {row["spec"] for row in plan.rows()}
        assert all(e.adopted for e in plan.entries.values() if e.node.kind != "scalar")
        layer = model.layers[0]
        startup = {p: _value(model, p) for p in case.watch}
        qc, experts = layer.quant_method.moe_quant_config, layer.quant_method.moe_kernel
        for seed in (1, 0):  # A -> B -> A, strict: raises if anything moved
            _reload(model, case, seed)
            assert layer.quant_method.moe_kernel is not experts  # vLLM rebuilt the objects
            assert layer.quant_method.moe_quant_config is not qc
            ref = cold[(case.id, seed)]
            assert vm.differing(model, ref) == []
            for path, tensor in startup.items():
                assert _value(model, path) is tensor  # the new objects hold the startup tensor
                assert torch.equal(tensor, _value(ref, path))  # ... with the new values
        counters = session.state_for(model).counters
    assert counters.refills == 2 and counters.strict_failures == 0 and counters.moved_last == 0


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_without_plugin_the_startup_objects_go_stale_or_are_dropped(case, cold):
    with vm.derivgraph_hooks(enabled=False):
        model = _build(case, 0)
        startup = {p: _value(model, p) for p in case.watch}
        _reload(model, case, 1)
    moved = [p for p, t in startup.items() if _value(model, p) is not t]
    assert moved  # the rebuilt objects hold new tensors; a captured graph reads the old ones
    if case.weight_valued:
        stale = [p for p, t in startup.items()
                 if not torch.equal(t, _value(cold[(case.id, 1)], p))]
        assert stale
