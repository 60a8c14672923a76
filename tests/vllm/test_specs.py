"""The built-in vLLM 0.33.0 spec library, proven against vLLM's own code on CPU.

Every MoE case builds a small layer shaped like vLLM's ``RoutedExperts`` whose quant method's
post-load step calls vLLM's REAL quant-config builders and experts constructors, exactly as the
vLLM quant methods do (``Fp8MoEMethod._init_moe_kernel``, ``ModelOptNvFp4FusedMoE.
_build_moe_kernel``, ...). ``derivgraph.compile_plan`` must then ADOPT every tensor vLLM made:
adoption checks values bit-exactly against the spec formulas, so a wrong formula (or a wrong
operation order) fails here. A reload with different scales reruns the post-load step, which
rebuilds the quant config and the experts; ``plan.refill`` must put the new values into the
startup storage that the OLD objects (what a captured CUDA graph reads) still hold, re-bind the
new objects to that storage, and match a cold start bit for bit (A -> B -> A).

The drafter and Kimi-K3 MLA cases run vLLM's real fused-buffer builders and post-load steps on
bare instances of the real model classes.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import torch
from torch import nn

pytestmark = pytest.mark.vllm

pytest.importorskip("vllm")

import vllm.model_executor.layers.fused_moe.modular_kernel as mk  # noqa: E402
import vllm.model_executor.layers.quantization.utils.flashinfer_fp4_moe as flashinfer_fp4_moe  # noqa: E402,E501
from vllm.model_executor.layers.attention.attention import set_default_quant_scales  # noqa: E402
from vllm.model_executor.layers.fused_moe.activation import MoEActivation  # noqa: E402
from vllm.model_executor.layers.fused_moe.all2all_utils import (  # noqa: E402
    maybe_make_prepare_finalize,
)
from vllm.model_executor.layers.fused_moe.config import (  # noqa: E402
    FusedMoEConfig,
    FusedMoEParallelConfig,
    RoutingMethodType,
)
from vllm.model_executor.layers.fused_moe.experts.cutlass_moe import (  # noqa: E402
    CutlassBatchedExpertsFp8,
    CutlassExpertsFp4,
    CutlassExpertsFp8,
    CutlassExpertsW4A8Fp8,
)
from vllm.model_executor.layers.fused_moe.experts.flashinfer_cutedsl_moe import (  # noqa: E402
    FlashInferCuteDSLExperts,
)
from vllm.model_executor.layers.fused_moe.experts.flashinfer_cutlass_moe import (  # noqa: E402
    FlashInferExperts,
)
from vllm.model_executor.layers.fused_moe.experts.triton_cutlass_moe import (  # noqa: E402
    TritonOrCutlassExperts,
)
from vllm.model_executor.layers.fused_moe.experts.triton_deep_gemm_moe import (  # noqa: E402
    TritonOrDeepGemmExperts,
)
from vllm.model_executor.layers.fused_moe.experts.trtllm_fp8_moe import (  # noqa: E402
    TrtLlmFp8ExpertsModular,
    TrtLlmFp8ExpertsMonolithic,
)
from vllm.model_executor.layers.fused_moe.experts.trtllm_mxfp4_moe import (  # noqa: E402
    TrtLlmMxfp4ExpertsModular,
    TrtLlmMxfp4ExpertsMonolithic,
)
from vllm.model_executor.layers.fused_moe.experts.trtllm_nvfp4_moe import (  # noqa: E402
    TrtLlmNvFp4ExpertsModular,
    TrtLlmNvFp4ExpertsMonolithic,
)
from vllm.model_executor.layers.fused_moe.oracle.fp8 import (  # noqa: E402
    Fp8MoeBackend,
    make_fp8_moe_kernel,
    make_fp8_moe_quant_config,
)
from vllm.model_executor.layers.fused_moe.oracle.mxfp4 import (  # noqa: E402
    Mxfp4MoeBackend,
    make_mxfp4_moe_quant_config,
)
from vllm.model_executor.layers.fused_moe.oracle.nvfp4 import (  # noqa: E402
    NvFp4MoeBackend,
    make_nvfp4_moe_kernel,
    make_nvfp4_moe_quant_config,
)
from vllm.model_executor.layers.fused_moe.oracle.w4a8 import (  # noqa: E402
    W4A8MoeBackend,
    make_w4a8_moe_kernel,
    make_w4a8_moe_quant_config,
)
from vllm.model_executor.layers.linear import UnquantizedLinearMethod  # noqa: E402
from vllm.model_executor.layers.quantization.compressed_tensors.compressed_tensors_moe.compressed_tensors_moe_w4a4_nvfp4 import (  # noqa: E402,E501
    CompressedTensorsW4A4Nvfp4MoEMethod,
)
from vllm.model_executor.layers.quantization.kv_cache import (  # noqa: E402
    BaseKVCacheMethod,
    KVCacheScaleParameter,
)
from vllm.model_executor.models.gemma4_dspark import Gemma4DSparkModel  # noqa: E402
from vllm.model_executor.models.laguna_dflash import DFlashLagunaModel  # noqa: E402
from vllm.model_executor.models.qwen3_dflash import DFlashQwen3Model  # noqa: E402
from vllm.models.kimi_k3.nvidia.mla import MultiHeadLatentAttention  # noqa: E402
from vllm.models.muse_spark.common.dspark import MuseSparkDSparkModel  # noqa: E402
from vllm.models.muse_spark.nvidia.muse_moe_runner import (  # noqa: E402
    MuseSparkModelOptNvFp4FusedMoE,
    MuseSparkTrtLlmNvFp4Experts,
)

from derivgraph import AdoptionError, compile_plan, load_spec_text  # noqa: E402
from derivgraph.errors import EngineComputedError  # noqa: E402
from derivgraph.paths import get_path  # noqa: E402
from derivgraph.spec.load import builtin_specs  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
E, H, N = 4, 256, 128  # local experts, hidden size, intermediate size per partition
PREFIX = "layers.0."
QC = "quant_method.moe_quant_config"
FE = "quant_method.moe_kernel.fused_experts"

SPECS = builtin_specs()


@pytest.fixture(scope="module", autouse=True)
def _cpu_accelerator():
    """The TRT-LLM experts constructors ask the accelerator for a device index; on a CPU-only
    machine that raises "Found no NVIDIA driver". Point it at the CPU for this module."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(torch.accelerator, "current_device_index", lambda: "cpu")
        # FlashInfer's TRT-LLM FP4 weight shuffle (Muse Spark's post-load step) needs a CUDA
        # device. It only permutes weights and block scales, never the global scales the specs
        # derive from; keep the layout as is.
        mp.setattr(flashinfer_fp4_moe, "prepare_static_weights_for_trtllm_fp4_moe",
                   lambda w13, w2, w13_scale, w2_scale, **_: (w13, w13_scale, w2, w2_scale))
        # Likewise the NVFP4 block-scale swizzle moves its result to CUDA (`.cuda()`).
        mp.setattr(flashinfer_fp4_moe, "swizzle_blockscale", lambda scale: scale)
        yield


# ---- a layer shaped like vLLM's RoutedExperts ------------------------------------------------

class RoutedExperts(nn.Module):
    """Weights, scales, moe_config and quant_method where vLLM's RoutedExperts keeps them."""

    def __init__(self, moe: FusedMoEConfig, quant_method: Any, ckpt: dict[str, torch.Tensor]):
        super().__init__()
        self.moe_config = moe
        self.local_num_experts = moe.num_local_experts
        self.activation = moe.activation
        self.swiglu_limit = moe.swiglu_limit
        self.swiglu_alpha = moe.swiglu_alpha
        self.swiglu_beta = moe.swiglu_beta
        for name, value in ckpt.items():
            self.register_parameter(name, nn.Parameter(value.clone(), requires_grad=False))
        self.quant_method = quant_method

    def _expert_routing_tables(self) -> None:
        return None


class Model(nn.Module):
    def __init__(self, layer: nn.Module):
        super().__init__()
        self.layers = nn.ModuleList([layer])


class _QuantMethod:
    """Holds what vLLM's FusedMoEMethodBase holds: moe, moe_quant_config, moe_kernel."""

    def __init__(self, moe: FusedMoEConfig, backend: Any, experts_cls: type, **options: Any):
        self.moe = moe
        self.backend = backend
        self.experts_cls = experts_cls
        self.options = options
        self.moe_quant_config = None
        self.moe_kernel = None


class Fp8MoEMethod(_QuantMethod):
    """Fp8MoEMethod._init_moe_kernel + get_fused_moe_quant_config (quantization/fp8.py:700-789)."""

    def process_weights_after_loading(self, layer: RoutedExperts) -> None:
        block = self.options.get("block_shape")
        scale_name = "weight_scale_inv" if block else "weight_scale"
        self.moe_quant_config = make_fp8_moe_quant_config(
            fp8_backend=self.backend,
            w1_scale=getattr(layer, f"w13_{scale_name}"),
            w2_scale=getattr(layer, f"w2_{scale_name}"),
            a1_scale=getattr(layer, "w13_input_scale", None),
            a2_scale=getattr(layer, "w2_input_scale", None),
            block_shape=block,
            per_act_token_quant=False,
            swiglu_limit=getattr(layer, "swiglu_limit", None),
            gemm1_alpha=getattr(layer, "swiglu_alpha", None),
            gemm1_beta=getattr(layer, "swiglu_beta", None),
            layer=layer,
        )
        if self.options.get("batched"):
            # make_fp8_moe_kernel needs a batched prepare/finalize (all2all) for batched
            # experts; keep the experts in a holder with the same `fused_experts` path.
            experts = self.experts_cls(moe_config=self.moe, quant_config=self.moe_quant_config,
                                       max_num_tokens=64, num_dispatchers=1)
            self.moe_kernel = _KernelHolder(experts)
            return
        self.moe_kernel = make_fp8_moe_kernel(
            moe_quant_config=self.moe_quant_config,
            moe_config=self.moe,
            fp8_backend=self.backend,
            experts_cls=self.experts_cls,
            routing_tables=layer._expert_routing_tables(),
        )


class _KernelHolder:
    def __init__(self, fused_experts: Any):
        self.fused_experts = fused_experts


class ModelOptNvFp4FusedMoE(_QuantMethod):
    """ModelOptNvFp4FusedMoE._build_moe_kernel + get_fused_moe_quant_config (modelopt.py:1104)."""

    input_scale = "input_scale"
    runs_experts_post_load = True

    def process_weights_after_loading(self, layer: RoutedExperts) -> None:
        self.moe_quant_config = make_nvfp4_moe_quant_config(
            backend=self.backend,
            w13_scale=layer.w13_weight_scale,
            w2_scale=layer.w2_weight_scale,
            w13_scale_2=layer.w13_weight_scale_2,
            w2_scale_2=layer.w2_weight_scale_2,
            a13_scale=getattr(layer, f"w13_{self.input_scale}"),
            a2_scale=getattr(layer, f"w2_{self.input_scale}"),
            swiglu_limit=getattr(layer, "swiglu_limit", None),
            swiglu_alpha=getattr(layer, "swiglu_alpha", None),
            swiglu_beta=getattr(layer, "swiglu_beta", None),
            layer=layer,
        )
        self.moe_kernel = make_nvfp4_moe_kernel(
            moe_quant_config=self.moe_quant_config,
            moe_config=self.moe,
            experts_cls=self.experts_cls,
            backend=self.backend,
            routing_tables=layer._expert_routing_tables(),
            per_token_activation=self.options.get("per_token_activation", False),
        )
        if self.runs_experts_post_load:
            self.moe_kernel.fused_experts.process_weights_after_loading(layer)


class QuarkNvfp4MoEMethod(ModelOptNvFp4FusedMoE):
    """QuarkNvfp4MoEMethod (quark/quark_moe.py:2336-2414): `w*_input_scale_2` names and no
    experts post-load step."""

    input_scale = "input_scale_2"
    runs_experts_post_load = False


class GptOssMxfp4MoEMethod(_QuantMethod):
    """gpt-oss MXFP4: make_mxfp4_moe_quant_config with 1.702 / 1.0 / 7.0 (mxfp4.py:428), then
    make_mxfp4_moe_kernel's body. Its _validate_mxfp4_experts_config rejects every backend on a
    machine without the GPU, so the prepare/finalize and the experts are built as it does."""

    def process_weights_after_loading(self, layer: RoutedExperts) -> None:
        self.moe_quant_config = make_mxfp4_moe_quant_config(
            self.backend, w1_scale=layer.w13_weight_scale, w2_scale=layer.w2_weight_scale,
            gemm1_alpha=1.702, gemm1_beta=1.0, swiglu_limit=7.0, layer=layer,
        )
        prepare_finalize = maybe_make_prepare_finalize(
            moe=self.moe, quant_config=self.moe_quant_config,
            routing_tables=layer._expert_routing_tables(), allow_new_interface=True,
            use_monolithic=issubclass(self.experts_cls, mk.FusedMoEExpertsMonolithic),
        )
        experts = self.experts_cls(moe_config=self.moe, quant_config=self.moe_quant_config)
        self.moe_kernel = mk.FusedMoEKernel(prepare_finalize, experts)


class CompressedTensorsW4A8Fp8MoEMethod(_QuantMethod):
    """compressed_tensors_moe_w4a8_fp8.py:150-205. The b_strides come from a CUDA op
    (cutlass_encode_and_reorder_int4b_grouped); fresh stand-ins are made on every run, as the op
    would."""

    def process_weights_after_loading(self, layer: RoutedExperts) -> None:
        self.b_strides1 = torch.full((E, 3), 7, dtype=torch.int64)
        self.b_strides2 = torch.full((E, 3), 5, dtype=torch.int64)
        self.moe_quant_config = make_w4a8_moe_quant_config(
            backend=self.backend, w1_scale=layer.w13_weight_scale, w2_scale=layer.w2_weight_scale,
            g1_alphas=layer.w13_weight_chan_scale, g2_alphas=layer.w2_weight_chan_scale,
            layer=layer,
        )
        self.moe_kernel = make_w4a8_moe_kernel(
            backend=self.backend, moe_quant_config=self.moe_quant_config, moe_config=self.moe,
            experts_cls=self.experts_cls, b_strides1=self.b_strides1, b_strides2=self.b_strides2,
            group_size=128, routing_tables=layer._expert_routing_tables(),
        )


# ---- checkpoints (kernel format) --------------------------------------------------------------

def _gen(seed: int) -> torch.Generator:
    return torch.Generator().manual_seed(seed)


def _pos(g: torch.Generator, shape: tuple[int, ...], lo: float, hi: float) -> torch.Tensor:
    return lo + (hi - lo) * torch.rand(shape, generator=g)


def _fp8(g: torch.Generator, shape: tuple[int, ...]) -> torch.Tensor:
    return (0.5 * torch.randn(shape, generator=g)).to(torch.float8_e4m3fn)


def _u8(g: torch.Generator, shape: tuple[int, ...]) -> torch.Tensor:
    return torch.randint(0, 256, shape, generator=g, dtype=torch.uint8)


def fp8_per_tensor_ckpt(seed: int) -> dict[str, torch.Tensor]:
    g = _gen(seed)
    return {
        "w13_weight": _fp8(g, (E, 2 * N, H)),
        "w2_weight": _fp8(g, (E, H, N)),
        "w13_weight_scale": _pos(g, (E,), 0.01, 0.03),
        "w2_weight_scale": _pos(g, (E,), 0.01, 0.03),
        # process_fp8_input_tensor_strategy_moe reduces the input scales to one value.
        "w13_input_scale": _pos(g, (), 0.5, 1.5),
        "w2_input_scale": _pos(g, (), 0.5, 1.5),
    }


def fp8_block_ckpt(seed: int) -> dict[str, torch.Tensor]:
    g = _gen(seed)
    return {
        "w13_weight": _fp8(g, (E, 2 * N, H)),
        "w2_weight": _fp8(g, (E, H, N)),
        "w13_weight_scale_inv": _pos(g, (E, 2 * N // 128, H // 128), 0.01, 0.03),
        "w2_weight_scale_inv": _pos(g, (E, H // 128, N // 128), 0.01, 0.03),
    }


def nvfp4_ckpt(seed: int, input_scale: str = "input_scale") -> dict[str, torch.Tensor]:
    g = _gen(seed)
    return {
        "w13_weight": _u8(g, (E, 2 * N, H // 2)),
        "w2_weight": _u8(g, (E, H, N // 2)),
        "w13_weight_scale": _pos(g, (E, 2 * N, H // 16), 0.5, 2.0).to(torch.float8_e4m3fn),
        "w2_weight_scale": _pos(g, (E, H, N // 16), 0.5, 2.0).to(torch.float8_e4m3fn),
        "w13_weight_scale_2": _pos(g, (E,), 1e-3, 3e-3),
        "w2_weight_scale_2": _pos(g, (E,), 1e-3, 3e-3),
        f"w13_{input_scale}": _pos(g, (E,), 0.5, 1.5),
        f"w2_{input_scale}": _pos(g, (E,), 0.5, 1.5),
    }


def quark_nvfp4_ckpt(seed: int) -> dict[str, torch.Tensor]:
    return nvfp4_ckpt(seed, "input_scale_2")


def mxfp4_ckpt(seed: int) -> dict[str, torch.Tensor]:
    g = _gen(seed)
    return {
        "w13_weight": _u8(g, (E, 2 * N, H // 2)),
        "w2_weight": _u8(g, (E, H, N // 2)),
        "w13_weight_scale": _u8(g, (E, 2 * N, H // 32)),
        "w2_weight_scale": _u8(g, (E, H, N // 32)),
    }


def w4a8_ckpt(seed: int) -> dict[str, torch.Tensor]:
    g = _gen(seed)
    return {
        "w13_weight": torch.randint(-128, 128, (E, 2 * N, H // 2), generator=g, dtype=torch.int8),
        "w2_weight": torch.randint(-128, 128, (E, H, N // 2), generator=g, dtype=torch.int8),
        "w13_weight_scale": _pos(g, (E, 2 * N, H // 128), 0.5, 2.0).to(torch.float8_e4m3fn),
        "w2_weight_scale": _pos(g, (E, H, N // 128), 0.5, 2.0).to(torch.float8_e4m3fn),
        "w13_weight_chan_scale": _pos(g, (E, 2 * N), 0.01, 0.03),
        "w2_weight_chan_scale": _pos(g, (E, H), 0.01, 0.03),
    }


def muse_spark_method(moe: FusedMoEConfig, backend: Any, experts_cls: type,
                      **options: Any) -> MuseSparkModelOptNvFp4FusedMoE:
    """The REAL MuseSparkModelOptNvFp4FusedMoE (its post-load step runs unchanged), without
    the ModelOpt config its constructor parses: the attributes that constructor sets."""
    method = MuseSparkModelOptNvFp4FusedMoE.__new__(MuseSparkModelOptNvFp4FusedMoE)
    method.moe, method.nvfp4_backend, method.experts_cls = moe, backend, experts_cls
    method.use_route_major, method.use_a16, method.per_token_activation = False, False, False
    method.muse_post_expert_finalize = object()
    method.moe_quant_config = method.moe_kernel = None
    return method


def muse_spark_ckpt(seed: int) -> dict[str, torch.Tensor]:
    """Muse Spark keeps separate w1/w3 global scales: w13_weight_scale_2 is [E, 2]."""
    ck = nvfp4_ckpt(seed)
    g = _gen(1000 + seed)
    ck["w13_weight_scale_2"] = _pos(g, (E, 2), 1e-3, 3e-3)
    ck["w13_input_scale"] = _pos(g, (E, 2), 0.5, 1.5)
    return ck


def muse_a(ck: Ck, name: str) -> torch.Tensor:
    # amax_for_moe_activation_quant(a).repeat(E), then [0:1] (muse_moe_runner.py:645)
    return ck[name].max().to(torch.float32).repeat(E)[0:1]


def muse_g1_scale_c(ck: Ck) -> torch.Tensor:
    return (muse_a(ck, "w13_input_scale") * ck["w13_weight_scale_2"][:, 1]
            / muse_a(ck, "w2_input_scale")).contiguous()


def compressed_tensors_nvfp4_method(moe: FusedMoEConfig, backend: Any, experts_cls: type,
                                    **options: Any) -> CompressedTensorsW4A4Nvfp4MoEMethod:
    """The REAL CompressedTensorsW4A4Nvfp4MoEMethod (post-load step unchanged), with the
    attributes its constructor sets instead of parsing a compressed-tensors config."""
    method = CompressedTensorsW4A4Nvfp4MoEMethod.__new__(CompressedTensorsW4A4Nvfp4MoEMethod)
    method.moe, method.nvfp4_backend, method.experts_cls = moe, backend, experts_cls
    method.use_a16, method.group_size = False, 16
    method.moe_quant_config = method.moe_kernel = None
    return method


def compressed_tensors_nvfp4_ckpt(seed: int) -> dict[str, torch.Tensor]:
    """Checkpoint format: packed weights and GLOBAL scales (the inverses of vLLM's scales)."""
    g = _gen(2000 + seed)
    return {
        "w13_weight_packed": _u8(g, (E, 2 * N, H // 2)),
        "w2_weight_packed": _u8(g, (E, H, N // 2)),
        "w13_weight_scale": _pos(g, (E, 2 * N, H // 16), 0.5, 2.0).to(torch.float8_e4m3fn),
        "w2_weight_scale": _pos(g, (E, H, N // 16), 0.5, 2.0).to(torch.float8_e4m3fn),
        "w13_weight_global_scale": _pos(g, (E, 2), 300.0, 900.0),
        "w2_weight_global_scale": _pos(g, (E,), 300.0, 900.0),
        "w13_input_global_scale": _pos(g, (E, 2), 0.5, 1.5),
        "w2_input_global_scale": _pos(g, (E,), 0.5, 1.5),
    }


def ct_a13_global(ck: Ck) -> torch.Tensor:
    # convert_to_nvfp4_moe_kernel_format, FlashInfer backends: amax(a).repeat(E)
    return (1.0 / ck["w13_input_global_scale"]).max().to(torch.float32).repeat(E)


def ct_a2_global(ck: Ck) -> torch.Tensor:
    return (1.0 / ck["w2_input_global_scale"]).max().to(torch.float32).repeat(E)


def ct_s2_folded(a13: Callable[[Ck], torch.Tensor]) -> Callable[[Ck], torch.Tensor]:
    # replace_parameter(w13_weight_scale_2, 1 / global[:, 0]), then the experts' in-place fold
    return lambda ck: (1.0 / ck["w13_weight_global_scale"][:, 0].contiguous()) * a13(ck)


def ct_cases() -> list[MoECase]:
    cases = []
    for backend, experts_cls, extra in (
        (NvFp4MoeBackend.FLASHINFER_TRTLLM, TrtLlmNvFp4ExpertsMonolithic,
         {"vllm-trtllm-nvfp4-g1-scale-c"}),
        (NvFp4MoeBackend.FLASHINFER_CUTLASS, FlashInferExperts, set()),
        (NvFp4MoeBackend.FLASHINFER_CUTEDSL, FlashInferCuteDSLExperts, set()),
    ):
        expected: dict[str, Callable[[Ck], Any] | None] = {
            "w13_input_scale": ct_a13_global,
            "w2_input_scale": ct_a2_global,
            f"{QC}._a1.alpha_or_gscale": lambda ck: 1.0 / ct_a13_global(ck),
            f"{QC}._a2.alpha_or_gscale": lambda ck: 1.0 / ct_a2_global(ck),
            f"{QC}._w1.alpha_or_gscale": ct_s2_folded(ct_a13_global),
            f"{QC}._w2.alpha_or_gscale": lambda ck: (
                1.0 / ck["w2_weight_global_scale"]) * ct_a2_global(ck),
            f"{QC}._w1.scale": None, f"{QC}._w2.scale": None,  # reordered: identity checked
        }
        if extra:
            expected["g1_scale_c"] = expected[f"{FE}.g1_scale_c"] = lambda ck: (
                ct_s2_folded(ct_a13_global)(ck) * (1.0 / ct_a2_global(ck)))
        cutedsl = experts_cls is FlashInferCuteDSLExperts  # its qc holds MMA-layout views
        if cutedsl:
            del expected[f"{QC}._w1.scale"], expected[f"{QC}._w2.scale"]
        cases.append(MoECase(
            f"nvfp4-compressed-tensors-{backend.value.lower()}", compressed_tensors_nvfp4_method,
            backend, experts_cls, compressed_tensors_nvfp4_ckpt,
            {"vllm-compressed-tensors-nvfp4-input-scales-global", "vllm-nvfp4-moe-quant-config",
             *(() if cutedsl else ("vllm-nvfp4-moe-quant-config-block-scales",)), *extra},
            expected,
            aliases={**NVFP4_QC_ALIASES, **({} if cutedsl else NVFP4_BLOCK_ALIASES),
                     **({f"{FE}.g1_scale_c": "g1_scale_c"} if extra else {})},
        ))
    cases.append(MoECase(
        "nvfp4-compressed-tensors-vllm-cutlass", compressed_tensors_nvfp4_method,
        NvFp4MoeBackend.VLLM_CUTLASS, CutlassExpertsFp4, compressed_tensors_nvfp4_ckpt,
        {"vllm-compressed-tensors-nvfp4-input-scales-cutlass", "vllm-nvfp4-moe-quant-config",
         "vllm-nvfp4-moe-quant-config-block-scales"},
        {
            "w13_input_scale": lambda ck: (1.0 / ck["w13_input_global_scale"]).max(dim=1).values,
            "w2_input_scale": lambda ck: 1.0 / ck["w2_input_global_scale"],
            f"{QC}._a1.alpha_or_gscale": lambda ck: 1.0 / (
                1.0 / ck["w13_input_global_scale"]).max(dim=1).values,
            f"{QC}._a2.alpha_or_gscale": lambda ck: 1.0 / (1.0 / ck["w2_input_global_scale"]),
            f"{QC}._w1.alpha_or_gscale": ct_s2_folded(
                lambda ck: (1.0 / ck["w13_input_global_scale"]).max(dim=1).values),
            f"{QC}._w2.alpha_or_gscale": lambda ck: (
                1.0 / ck["w2_weight_global_scale"]) * (1.0 / ck["w2_input_global_scale"]),
            f"{QC}._w1.scale": None, f"{QC}._w2.scale": None,
        },
        aliases={**NVFP4_QC_ALIASES, **NVFP4_BLOCK_ALIASES},
    ))
    return cases


# ---- the cases --------------------------------------------------------------------------------

Ck = dict[str, torch.Tensor]


def full_e(value: float) -> Callable[[Ck], torch.Tensor]:
    return lambda ck: torch.full((E,), value, dtype=torch.float32)


@dataclass
class MoECase:
    """One vLLM MoE configuration.

    ``expected`` maps every derived tensor the built-in specs must bind (path from the layer) to
    its value, written out here from vLLM's source as a function of the CHECKPOINT (so it is
    independent of the engine and of the spec). ``aliases`` maps paths to the path of the
    object they must be (the same tensor object, not a copy).
    """

    id: str
    method: type
    backend: Any
    experts_cls: type
    ckpt: Callable[[int], Ck]
    specs: set[str]
    expected: dict[str, Callable[[Ck], Any] | None]
    aliases: dict[str, str] = field(default_factory=dict)
    moe: dict[str, Any] = field(default_factory=dict)
    options: dict[str, Any] = field(default_factory=dict)
    activation_after_init: MoEActivation | None = None
    weight_valued: bool = True
    # Aliases whose engine object is a different tensor of equal value: not adopted, re-bound.
    rebound: set[str] = field(default_factory=set)


def make_moe_config(case: MoECase) -> FusedMoEConfig:
    kwargs = {"activation": MoEActivation.SILU, **case.moe}
    moe = FusedMoEConfig(
        num_experts=E, experts_per_token=2, hidden_dim=H, intermediate_size=N,
        num_local_experts=E, num_logical_experts=E, device="cpu",
        routing_method=RoutingMethodType.Renormalize,
        moe_parallel_config=FusedMoEParallelConfig.make_no_parallel(),
        in_dtype=torch.bfloat16, **kwargs,
    )
    if case.activation_after_init is not None:
        # FusedMoEConfig refuses non-gated activations off CUDA/XPU/ROCm at construction; the
        # experts only read the (mutable) activation afterwards.
        moe.activation = case.activation_after_init
    return moe


def cold_start(case: MoECase, ckpt: Ck) -> Model:
    """Construct, load `ckpt`, run the quant method's post-load step."""
    moe = make_moe_config(case)
    method = case.method(moe, case.backend, case.experts_cls, **case.options)
    layer = RoutedExperts(moe, method, ckpt)
    if "block_shape" in case.options:
        layer.w13_input_scale = None  # Fp8MoEMethod.create_weights, dynamic activations
        layer.w2_input_scale = None
    method.process_weights_after_loading(layer)
    return Model(layer)


def reload(model: Model, ckpt: Ck) -> None:
    """What a reload does to this layer: the loaders write into the kept Parameters (and
    checkpoint-format ones a post-load step consumed, such as compressed-tensors'
    `w*_weight_packed`, are restored), then the quant post-load step reruns, rebuilding the quant
    config and the experts."""
    layer = model.layers[0]
    with torch.no_grad():
        for name, value in ckpt.items():
            if isinstance(getattr(layer, name, None), torch.Tensor):
                getattr(layer, name).copy_(value)
            else:
                layer.register_parameter(name, nn.Parameter(value.clone(), requires_grad=False))
    layer.quant_method.process_weights_after_loading(layer)


def trtllm_g1_alphas(ck: Ck) -> torch.Tensor:
    # TrtLlmFp8ExpertsMonolithic: (w1_scale * a1_scale).squeeze(), multiply first
    return (ck["w13_weight_scale"] * ck["w13_input_scale"]).squeeze()


def trtllm_g2_alphas(ck: Ck) -> torch.Tensor:
    return (ck["w2_weight_scale"] * ck["w2_input_scale"]).squeeze()


def g1_scale_c_folded(ck: Ck) -> torch.Tensor:
    # experts post-load step: w13_weight_scale_2 *= w13_input_scale, then g1_alphas * a2_gscale
    return (ck["w13_weight_scale_2"] * ck["w13_input_scale"]) * (1.0 / ck["w2_input_scale"])


def qc_fp8_scales() -> dict[str, Callable[[Ck], Any]]:
    return {
        f"{QC}._w1.scale": lambda ck: ck["w13_weight_scale"],
        f"{QC}._w2.scale": lambda ck: ck["w2_weight_scale"],
        f"{QC}._a1.scale": lambda ck: ck["w13_input_scale"],
        f"{QC}._a2.scale": lambda ck: ck["w2_input_scale"],
    }


# CUTLASS FP8 keeps the layer's scales in the quant config (found by strict mode, see
# specs/vllm_moe_cutlass.yaml); after a layerwise reload they alias reload temporaries.
CUTLASS_QC = "vllm-cutlass-fp8-quant-config-scales"

FP8_QC_SCALE_ALIASES = {
    f"{QC}._w1.scale": "w13_weight_scale", f"{QC}._w2.scale": "w2_weight_scale",
    f"{QC}._a1.scale": "w13_input_scale", f"{QC}._a2.scale": "w2_input_scale",
}


def nvfp4_qc(folded: bool, input_scale: str = "input_scale") -> dict[str, Callable[[Ck], Any]]:
    a13, a2 = f"w13_{input_scale}", f"w2_{input_scale}"

    def s2(name: str, a: str) -> Callable[[Ck], torch.Tensor]:
        return (lambda ck: ck[name] * ck[a]) if folded else (lambda ck: ck[name])

    return {
        f"{QC}._a1.alpha_or_gscale": lambda ck: 1.0 / ck[a13],
        f"{QC}._a2.alpha_or_gscale": lambda ck: 1.0 / ck[a2],
        f"{QC}._w1.alpha_or_gscale": s2("w13_weight_scale_2", a13),
        f"{QC}._w2.alpha_or_gscale": s2("w2_weight_scale_2", a2),
    }


NVFP4_QC_ALIASES = {
    f"{QC}._w1.alpha_or_gscale": "w13_weight_scale_2",
    f"{QC}._w2.alpha_or_gscale": "w2_weight_scale_2",
}
NVFP4_BLOCK_SCALES = {
    f"{QC}._w1.scale": lambda ck: ck["w13_weight_scale"],
    f"{QC}._w2.scale": lambda ck: ck["w2_weight_scale"],
}
NVFP4_BLOCK_ALIASES = {f"{QC}._w1.scale": "w13_weight_scale", f"{QC}._w2.scale": "w2_weight_scale"}
SWIGLU = {"swiglu_limit": 7.0, "swiglu_alpha": 1.702, "swiglu_beta": 1.0}
SITU = {"activation": MoEActivation.SITU, "activation_situ_beta": 2.0,
        "activation_situ_linear_beta": 3.0}


def strides(owner: str, k: int, n: int) -> dict[str, Callable[[Ck], torch.Tensor]]:
    def const(v: int) -> Callable[[Ck], torch.Tensor]:
        return lambda ck: torch.full((E,), v, dtype=torch.int64)

    return {f"{owner}.ab_strides1": const(k), f"{owner}.c_strides2": const(k),
            f"{owner}.ab_strides2": const(n), f"{owner}.c_strides1": const(2 * n)}


CASES = [
    MoECase(
        "fp8-flashinfer-cutlass-per-tensor", Fp8MoEMethod, Fp8MoeBackend.FLASHINFER_CUTLASS,
        FlashInferExperts, fp8_per_tensor_ckpt,
        {"vllm-fp8-flashinfer-cutlass-per-tensor", "vllm-flashinfer-cutlass-gemm1-clamp-limit"},
        {
            "g1_alphas": lambda ck: ck["w13_weight_scale"] * ck["w13_input_scale"],
            "g2_alphas": lambda ck: ck["w2_weight_scale"] * ck["w2_input_scale"],
            f"{QC}._w1.alpha_or_gscale": lambda ck: ck["w13_weight_scale"] * ck["w13_input_scale"],
            f"{QC}._w2.alpha_or_gscale": lambda ck: ck["w2_weight_scale"] * ck["w2_input_scale"],
            f"{QC}._a1.alpha_or_gscale": lambda ck: 1.0 / ck["w13_input_scale"],
            f"{QC}._a2.alpha_or_gscale": lambda ck: 1.0 / ck["w2_input_scale"],
            **qc_fp8_scales(),
            f"{FE}.gemm1_clamp_limit": full_e(7.0),
        },
        aliases={f"{QC}._w1.alpha_or_gscale": "g1_alphas",
                 f"{QC}._w2.alpha_or_gscale": "g2_alphas", **FP8_QC_SCALE_ALIASES},
        moe={"swiglu_limit": 7.0},
    ),
    MoECase(
        "fp8-trtllm-per-tensor", Fp8MoEMethod, Fp8MoeBackend.FLASHINFER_TRTLLM,
        TrtLlmFp8ExpertsMonolithic, fp8_per_tensor_ckpt, {"vllm-trtllm-fp8-per-tensor-gated"},
        {
            f"{FE}._g1_alphas": trtllm_g1_alphas,
            f"{FE}._g2_alphas": trtllm_g2_alphas,
            f"{FE}._g1_scale_c": lambda ck: trtllm_g1_alphas(ck) / ck["w2_input_scale"],
            **qc_fp8_scales(),
        },
        aliases=FP8_QC_SCALE_ALIASES,
    ),
    MoECase(
        "fp8-trtllm-per-tensor-non-gated", Fp8MoEMethod, Fp8MoeBackend.FLASHINFER_TRTLLM,
        TrtLlmFp8ExpertsMonolithic, fp8_per_tensor_ckpt, {"vllm-trtllm-fp8-per-tensor-non-gated"},
        {
            f"{FE}._g1_alphas": trtllm_g1_alphas,
            f"{FE}._g2_alphas": trtllm_g2_alphas,
            f"{FE}._g1_scale_c": lambda ck: torch.ones(E) / ck["w2_input_scale"],
            **qc_fp8_scales(),
        },
        aliases=FP8_QC_SCALE_ALIASES,
        activation_after_init=MoEActivation.RELU2_NO_MUL,
    ),
    MoECase(
        "fp8-trtllm-block-swiglu", Fp8MoEMethod, Fp8MoeBackend.FLASHINFER_TRTLLM,
        TrtLlmFp8ExpertsMonolithic, fp8_block_ckpt,
        {"vllm-trtllm-fp8-gemm1-alpha", "vllm-trtllm-fp8-gemm1-beta",
         "vllm-trtllm-fp8-gemm1-clamp-limit"},
        {f"{FE}.gemm1_alpha": full_e(1.702), f"{FE}.gemm1_beta": full_e(1.0),
         f"{FE}.gemm1_clamp_limit": full_e(7.0)},
        moe=SWIGLU, options={"block_shape": [128, 128]}, weight_valued=False,
    ),
    MoECase(
        "fp8-trtllm-modular-block-swiglu", Fp8MoEMethod, Fp8MoeBackend.FLASHINFER_TRTLLM,
        TrtLlmFp8ExpertsModular, fp8_block_ckpt,
        {"vllm-trtllm-fp8-gemm1-alpha", "vllm-trtllm-fp8-gemm1-beta",
         "vllm-trtllm-fp8-gemm1-clamp-limit"},
        {f"{FE}.gemm1_alpha": full_e(1.702), f"{FE}.gemm1_beta": full_e(1.0),
         f"{FE}.gemm1_clamp_limit": full_e(7.0)},
        moe=SWIGLU, options={"block_shape": [128, 128]}, weight_valued=False,
    ),
    MoECase(
        "fp8-cutlass", Fp8MoEMethod, Fp8MoeBackend.VLLM_CUTLASS, CutlassExpertsFp8,
        fp8_per_tensor_ckpt, {"vllm-cutlass-fp8-strides", CUTLASS_QC},
        {**strides(FE, H, N), **qc_fp8_scales()},
        aliases={f"{FE}.c_strides2": f"{FE}.ab_strides1", **FP8_QC_SCALE_ALIASES},
    ),
    MoECase(
        "fp8-cutlass-batched", Fp8MoEMethod, Fp8MoeBackend.BATCHED_VLLM_CUTLASS,
        CutlassBatchedExpertsFp8, fp8_per_tensor_ckpt, {"vllm-cutlass-fp8-strides", CUTLASS_QC},
        {**strides(FE, H, N), **qc_fp8_scales()},
        aliases={f"{FE}.c_strides2": f"{FE}.ab_strides1", **FP8_QC_SCALE_ALIASES},
        options={"batched": True},
    ),
    MoECase(
        "fp8-triton-or-cutlass", Fp8MoEMethod, Fp8MoeBackend.VLLM_CUTLASS, TritonOrCutlassExperts,
        fp8_per_tensor_ckpt, {"vllm-cutlass-fp8-strides-fallback", CUTLASS_QC},
        {**strides(f"{FE}.experts", H, N), **qc_fp8_scales()},
        aliases={f"{FE}.experts.c_strides2": f"{FE}.experts.ab_strides1",
                 **FP8_QC_SCALE_ALIASES},
    ),
    MoECase(
        "nvfp4-trtllm-swiglu", ModelOptNvFp4FusedMoE, NvFp4MoeBackend.FLASHINFER_TRTLLM,
        TrtLlmNvFp4ExpertsMonolithic, nvfp4_ckpt,
        {"vllm-nvfp4-moe-quant-config", "vllm-nvfp4-moe-quant-config-block-scales",
         "vllm-trtllm-nvfp4-g1-scale-c", "vllm-trtllm-nvfp4-gemm1-clamp-limit",
         "vllm-trtllm-nvfp4-gemm1-beta", "vllm-trtllm-nvfp4-gemm1-alpha"},
        {
            **nvfp4_qc(folded=True), **NVFP4_BLOCK_SCALES,
            "g1_scale_c": g1_scale_c_folded, f"{FE}.g1_scale_c": g1_scale_c_folded,
            "gemm1_clamp_limit": lambda ck: torch.full((E,), 7.0) / (
                ck["w13_weight_scale_2"] * ck["w13_input_scale"]),
            f"{FE}.gemm1_clamp_limit": lambda ck: torch.full((E,), 7.0) / (
                ck["w13_weight_scale_2"] * ck["w13_input_scale"]),
            "gemm1_beta": lambda ck: torch.full((E,), 1.0) / (
                ck["w13_weight_scale_2"] * ck["w13_input_scale"]),
            f"{FE}.gemm1_beta": lambda ck: torch.full((E,), 1.0) / (
                ck["w13_weight_scale_2"] * ck["w13_input_scale"]),
            "gemm1_alpha": full_e(1.702), f"{FE}.gemm1_alpha": full_e(1.702),
        },
        aliases={**NVFP4_QC_ALIASES, **NVFP4_BLOCK_ALIASES, f"{FE}.g1_scale_c": "g1_scale_c",
                 f"{FE}.gemm1_clamp_limit": "gemm1_clamp_limit", f"{FE}.gemm1_beta": "gemm1_beta",
                 f"{FE}.gemm1_alpha": "gemm1_alpha"},
        moe={**SWIGLU, "activation": MoEActivation.SWIGLUOAI_UNINTERLEAVE},
    ),
    MoECase(
        "nvfp4-trtllm-modular-situ", ModelOptNvFp4FusedMoE, NvFp4MoeBackend.FLASHINFER_TRTLLM,
        TrtLlmNvFp4ExpertsModular, nvfp4_ckpt,
        {"vllm-nvfp4-moe-quant-config", "vllm-nvfp4-moe-quant-config-block-scales",
         "vllm-trtllm-nvfp4-g1-scale-c-ungated", "vllm-trtllm-nvfp4-situ"},
        {
            **nvfp4_qc(folded=True), **NVFP4_BLOCK_SCALES,
            "g1_scale_c": lambda ck: 1.0 / ck["w2_input_scale"],
            f"{FE}.g1_scale_c": lambda ck: 1.0 / ck["w2_input_scale"],
            "gemm1_alpha": full_e(2.0), f"{FE}.gemm1_alpha": full_e(2.0),
            "gemm1_beta": full_e(3.0), f"{FE}.gemm1_beta": full_e(3.0),
        },
        aliases={**NVFP4_QC_ALIASES, **NVFP4_BLOCK_ALIASES, f"{FE}.g1_scale_c": "g1_scale_c",
                 f"{FE}.gemm1_alpha": "gemm1_alpha", f"{FE}.gemm1_beta": "gemm1_beta"},
        moe=SITU,
    ),
    MoECase(
        "nvfp4-quark-trtllm-swiglu", QuarkNvfp4MoEMethod, NvFp4MoeBackend.FLASHINFER_TRTLLM,
        TrtLlmNvFp4ExpertsMonolithic, quark_nvfp4_ckpt,
        {"vllm-quark-nvfp4-moe-quant-config", "vllm-nvfp4-moe-quant-config-block-scales",
         "vllm-quark-trtllm-nvfp4-g1-scale-c", "vllm-quark-trtllm-nvfp4-gemm1-clamp-limit",
         "vllm-quark-trtllm-nvfp4-gemm1-beta", "vllm-quark-trtllm-nvfp4-gemm1-alpha"},
        {
            **nvfp4_qc(folded=False, input_scale="input_scale_2"), **NVFP4_BLOCK_SCALES,
            f"{FE}.g1_scale_c": lambda ck: (
                ck["w13_weight_scale_2"] * (1.0 / ck["w2_input_scale_2"])),
            f"{FE}.gemm1_clamp_limit": full_e(7.0), f"{FE}.gemm1_beta": full_e(1.0),
            f"{FE}.gemm1_alpha": full_e(1.702),
        },
        aliases={**NVFP4_QC_ALIASES, **NVFP4_BLOCK_ALIASES},
        moe={**SWIGLU, "activation": MoEActivation.SWIGLUOAI_UNINTERLEAVE},
    ),
    MoECase(
        "nvfp4-quark-trtllm-situ", QuarkNvfp4MoEMethod, NvFp4MoeBackend.FLASHINFER_TRTLLM,
        TrtLlmNvFp4ExpertsModular, quark_nvfp4_ckpt,
        {"vllm-quark-nvfp4-moe-quant-config", "vllm-nvfp4-moe-quant-config-block-scales",
         "vllm-quark-trtllm-nvfp4-g1-scale-c-ungated", "vllm-quark-trtllm-nvfp4-situ"},
        {
            **nvfp4_qc(folded=False, input_scale="input_scale_2"), **NVFP4_BLOCK_SCALES,
            f"{FE}.g1_scale_c": lambda ck: 1.0 / ck["w2_input_scale_2"],
            f"{FE}.gemm1_alpha": full_e(2.0), f"{FE}.gemm1_beta": full_e(3.0),
        },
        aliases={**NVFP4_QC_ALIASES, **NVFP4_BLOCK_ALIASES},
        moe=SITU,
    ),
    MoECase(
        "nvfp4-flashinfer-cutlass-swiglu", ModelOptNvFp4FusedMoE,
        NvFp4MoeBackend.FLASHINFER_CUTLASS, FlashInferExperts, nvfp4_ckpt,
        {"vllm-nvfp4-moe-quant-config", "vllm-nvfp4-moe-quant-config-block-scales",
         "vllm-flashinfer-cutlass-gemm1-alpha", "vllm-flashinfer-cutlass-gemm1-beta",
         "vllm-flashinfer-cutlass-gemm1-clamp-limit"},
        {**nvfp4_qc(folded=True), **NVFP4_BLOCK_SCALES, f"{FE}.gemm1_alpha": full_e(1.702),
         f"{FE}.gemm1_beta": full_e(1.0), f"{FE}.gemm1_clamp_limit": full_e(7.0)},
        aliases={**NVFP4_QC_ALIASES, **NVFP4_BLOCK_ALIASES},
        moe={**SWIGLU, "activation": MoEActivation.SWIGLUOAI_UNINTERLEAVE},
    ),
    MoECase(
        "nvfp4-cutedsl-per-token", ModelOptNvFp4FusedMoE, NvFp4MoeBackend.FLASHINFER_CUTEDSL,
        FlashInferCuteDSLExperts, nvfp4_ckpt,
        {"vllm-nvfp4-moe-quant-config", "vllm-cutedsl-nvfp4-per-token-global-scale",
         "vllm-cutedsl-nvfp4-gemm1-alpha", "vllm-cutedsl-nvfp4-gemm1-beta",
         "vllm-cutedsl-nvfp4-gemm1-clamp-limit"},
        {
            **nvfp4_qc(folded=True),
            f"{FE}.per_token_global_scale": lambda ck: torch.full((1,), 1.0 / (448.0 * 6.0)),
            f"{FE}.gemm1_alpha": lambda ck: 1.702, f"{FE}.gemm1_beta": lambda ck: 1.0,
            f"{FE}.gemm1_clamp_limit": lambda ck: 7.0,
        },
        aliases=NVFP4_QC_ALIASES, moe=SWIGLU, options={"per_token_activation": True},
    ),
    MoECase(
        "nvfp4-vllm-cutlass", ModelOptNvFp4FusedMoE, NvFp4MoeBackend.VLLM_CUTLASS,
        CutlassExpertsFp4, nvfp4_ckpt,
        {"vllm-nvfp4-moe-quant-config", "vllm-nvfp4-moe-quant-config-block-scales"},
        {**nvfp4_qc(folded=True), **NVFP4_BLOCK_SCALES},  # CutlassExpertsFp4 folds too
        aliases={**NVFP4_QC_ALIASES, **NVFP4_BLOCK_ALIASES},
    ),
    MoECase(
        "nvfp4-muse-spark-trtllm", muse_spark_method, NvFp4MoeBackend.FLASHINFER_TRTLLM,
        MuseSparkTrtLlmNvFp4Experts, muse_spark_ckpt, {"vllm-muse-spark-nvfp4-moe"},
        {
            f"{QC}._w1.alpha_or_gscale": lambda ck: (
                muse_a(ck, "w13_input_scale") * ck["w13_weight_scale_2"][:, 0]).contiguous(),
            "g1_scale_c": muse_g1_scale_c,
            f"{FE}.g1_scale_c": muse_g1_scale_c,
            f"{QC}.g1_scale_c": muse_g1_scale_c,
            f"{QC}._w2.alpha_or_gscale": lambda ck: (
                muse_a(ck, "w2_input_scale") * ck["w2_weight_scale_2"]).contiguous(),
            f"{QC}._a1.alpha_or_gscale": lambda ck: 1.0 / muse_a(ck, "w13_input_scale"),
            f"{QC}._a2.alpha_or_gscale": lambda ck: 1.0 / muse_a(ck, "w2_input_scale"),
            # block scales after the w1/w3 reorder: checked as the same objects below
            f"{QC}._w1.scale": None, f"{QC}._w2.scale": None,
        },
        aliases={f"{FE}.g1_scale_c": "g1_scale_c", f"{QC}.g1_scale_c": "g1_scale_c",
                 **NVFP4_BLOCK_ALIASES},
        rebound={f"{QC}.g1_scale_c"},
    ),
    MoECase(
        "mxfp4-trtllm-bf16", GptOssMxfp4MoEMethod, Mxfp4MoeBackend.FLASHINFER_TRTLLM_MXFP4_BF16,
        TrtLlmMxfp4ExpertsMonolithic, mxfp4_ckpt,
        {"vllm-trtllm-mxfp4-gemm1-alpha", "vllm-trtllm-mxfp4-gemm1-beta",
         "vllm-trtllm-mxfp4-gemm1-clamp-limit"},
        {f"{FE}.gemm1_alpha": full_e(1.702), f"{FE}.gemm1_beta": full_e(1.0),
         f"{FE}.gemm1_clamp_limit": full_e(7.0)},
        moe={"activation": MoEActivation.SWIGLUOAI}, weight_valued=False,
    ),
    MoECase(
        "mxfp4-trtllm-mxfp8-modular", GptOssMxfp4MoEMethod,
        Mxfp4MoeBackend.FLASHINFER_TRTLLM_MXFP4_MXFP8, TrtLlmMxfp4ExpertsModular, mxfp4_ckpt,
        {"vllm-trtllm-mxfp4-gemm1-alpha", "vllm-trtllm-mxfp4-gemm1-beta",
         "vllm-trtllm-mxfp4-gemm1-clamp-limit"},
        {f"{FE}.gemm1_alpha": full_e(1.702), f"{FE}.gemm1_beta": full_e(1.0),
         f"{FE}.gemm1_clamp_limit": full_e(7.0)},
        moe={"activation": MoEActivation.SWIGLUOAI}, weight_valued=False,
    ),
    MoECase(
        "mxfp4-trtllm-situ", GptOssMxfp4MoEMethod, Mxfp4MoeBackend.FLASHINFER_TRTLLM_MXFP4_BF16,
        TrtLlmMxfp4ExpertsMonolithic, mxfp4_ckpt, {"vllm-trtllm-mxfp4-situ"},
        {f"{FE}.gemm1_alpha": full_e(2.0), f"{FE}.gemm1_beta": full_e(3.0)},
        moe=SITU, weight_valued=False,
    ),
    MoECase(
        "mxfp4-flashinfer-cutlass-mxfp8", GptOssMxfp4MoEMethod,
        Mxfp4MoeBackend.FLASHINFER_CUTLASS_MXFP4_MXFP8, FlashInferExperts, mxfp4_ckpt,
        {"vllm-flashinfer-cutlass-gemm1-alpha", "vllm-flashinfer-cutlass-gemm1-beta",
         "vllm-flashinfer-cutlass-gemm1-clamp-limit",
         "vllm-flashinfer-cutlass-mxfp8-fake-input-scale"},
        {f"{FE}.gemm1_alpha": full_e(1.702), f"{FE}.gemm1_beta": full_e(1.0),
         f"{FE}.gemm1_clamp_limit": full_e(7.0), f"{FE}.fake_input_scale": full_e(1.0)},
        moe={"activation": MoEActivation.SWIGLUOAI}, weight_valued=False,
    ),
    MoECase(
        "w4a8-cutlass", CompressedTensorsW4A8Fp8MoEMethod, W4A8MoeBackend.CUTLASS,
        CutlassExpertsW4A8Fp8, w4a8_ckpt,
        {"vllm-cutlass-w4a8-strides", "vllm-cutlass-w4a8-quant-config",
         "vllm-cutlass-w4a8-b-strides"},
        {
            # issue12: engine-computed (the CUDA op's stand-ins in the fixture above)
            "quant_method.b_strides1": lambda ck: torch.full((E, 3), 7, dtype=torch.int64),
            "quant_method.b_strides2": lambda ck: torch.full((E, 3), 5, dtype=torch.int64),
            f"{FE}.b_strides1": lambda ck: torch.full((E, 3), 7, dtype=torch.int64),
            f"{FE}.b_strides2": lambda ck: torch.full((E, 3), 5, dtype=torch.int64),
            f"{FE}.a_strides1": lambda ck: torch.full((E,), H, dtype=torch.int64),
            f"{FE}.c_strides2": lambda ck: torch.full((E,), H, dtype=torch.int64),
            f"{FE}.a_strides2": lambda ck: torch.full((E,), N, dtype=torch.int64),
            f"{FE}.c_strides1": lambda ck: torch.full((E,), 2 * N, dtype=torch.int64),
            f"{FE}.s_strides1": lambda ck: torch.tensor([[2 * N, 0]] * E, dtype=torch.int64),
            f"{FE}.s_strides2": lambda ck: torch.tensor([[H, 0]] * E, dtype=torch.int64),
            f"{QC}._w1.alpha_or_gscale": lambda ck: ck["w13_weight_chan_scale"],
            f"{QC}._w2.alpha_or_gscale": lambda ck: ck["w2_weight_chan_scale"],
            f"{QC}._w1.scale": lambda ck: ck["w13_weight_scale"],
            f"{QC}._w2.scale": lambda ck: ck["w2_weight_scale"],
        },
        aliases={f"{FE}.c_strides2": f"{FE}.a_strides1",
                 f"{FE}.b_strides1": "quant_method.b_strides1",
                 f"{FE}.b_strides2": "quant_method.b_strides2",
                 f"{QC}._w1.alpha_or_gscale": "w13_weight_chan_scale",
                 f"{QC}._w2.alpha_or_gscale": "w2_weight_chan_scale",
                 f"{QC}._w1.scale": "w13_weight_scale", f"{QC}._w2.scale": "w2_weight_scale"},
    ),
    *ct_cases(),
]


# ---- checks -----------------------------------------------------------------------------------

def _value(obj: Any) -> Any:
    return obj.detach().clone() if isinstance(obj, torch.Tensor) else obj


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, torch.Tensor) or isinstance(b, torch.Tensor):
        return (isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor)
                and a.dtype == b.dtype and a.shape == b.shape and torch.equal(a, b))
    return type(a) is type(b) and a == b


def snapshot(model: nn.Module, keys: list[str]) -> dict[str, Any]:
    return {k: _value(get_path(model, k)) for k in keys}


def assert_expected(case: MoECase, model: nn.Module, ckpt: Ck) -> None:
    for rel, fn in case.expected.items():
        if fn is None:
            continue
        got, want = get_path(model, PREFIX + rel), fn(ckpt)
        assert _same(got, want), f"{case.id}: {rel} = {got!r}, vLLM's formula gives {want!r}"


def _holder_and_name(model: nn.Module, key: str) -> tuple[Any, str]:
    owner, _, name = key.rpartition(".")
    return get_path(model, owner), name


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_moe_specs_adopt_and_refill_vllm_tensors(case: MoECase) -> None:
    ckpt_a, ckpt_b = case.ckpt(0), case.ckpt(1)
    model = cold_start(case, ckpt_a)
    layer = model.layers[0]
    keys = sorted(PREFIX + k for k in case.expected)
    engine_a = snapshot(model, keys)
    engine_objects = {k: get_path(model, k) for k in keys}

    plan = compile_plan(model, SPECS)
    # Exactly the expected tensors are bound, by exactly the expected specs, and every tensor
    # vLLM made was ADOPTED (kept as is, after a bit-exact value check against the formula).
    assert sorted(plan.entries) == keys
    assert {e.node.bound.spec.name for e in plan.entries.values()} == case.specs
    strict = compile_plan(model, [s for s in SPECS if s.name in case.specs], require_match=True)
    assert sorted(strict.entries) == keys
    for key, entry in plan.entries.items():
        if entry.node.kind == "scalar":
            assert _same(entry.storage, engine_a[key]), key  # the engine's own Python number
        elif key[len(PREFIX):] in case.rebound:
            assert not entry.adopted and entry.storage is not engine_objects[key], key
            assert _same(entry.storage, engine_a[key]), key
        else:
            assert entry.adopted, f"{key} was not adopted"
            assert entry.storage is engine_objects[key], key
    assert_expected(case, model, ckpt_a)
    for rel, target in case.aliases.items():
        assert get_path(model, PREFIX + rel) is get_path(model, PREFIX + target), rel

    # What a captured CUDA graph holds: the startup objects, their addresses and their holders.
    startup = {k: e.storage for k, e in plan.entries.items()}
    ptrs = {k: t.data_ptr() for k, t in startup.items() if isinstance(t, torch.Tensor)}
    old_holders = {k: _holder_and_name(model, k) for k in keys}
    old_experts = layer.quant_method.moe_kernel.fused_experts
    old_qc = layer.quant_method.moe_quant_config

    # Reload with different scales: vLLM rebuilds the quant config and the experts.
    reload(model, ckpt_b)
    assert layer.quant_method.moe_kernel.fused_experts is not old_experts
    assert layer.quant_method.moe_quant_config is not old_qc
    assert plan.moved(), "the engine's rebuild should have moved graph-visible tensors"
    engine_b = snapshot(model, keys)

    report = plan.refill(verify=True)
    assert report.moved == []
    assert report.recapture_required == []
    tensors = [k for k, e in plan.entries.items() if e.node.kind not in ("alias", "scalar")]
    assert report.taken_from_engine == len(tensors)
    cold_b = cold_start(case, ckpt_b)
    for key in keys:
        current = get_path(model, key)
        owner, name = old_holders[key]
        if key in ptrs:
            assert current is startup[key], f"{key}: not re-bound to the startup object"
            assert current.data_ptr() == ptrs[key], key
            assert getattr(owner, name) is startup[key], f"{key}: the old holder lost its tensor"
        else:  # a Python scalar: the plan tracks its value (a graph would need a recapture)
            assert _same(plan.entries[key].storage, current), key
        assert _same(current, engine_b[key]), f"{key}: refill lost the engine's new value"
        assert _same(current, _value(get_path(cold_b, key))), f"{key}: differs from a cold start"
    assert_expected(case, model, ckpt_b)
    for rel, target in case.aliases.items():
        assert get_path(model, PREFIX + rel) is get_path(model, PREFIX + target), rel
    if case.weight_valued:
        assert any(not _same(engine_a[k], engine_b[k]) for k in keys), "A and B must differ"

    # Recomputing from the formulas (not taking the engine's values) gives the same bits;
    # engine-computed tensors (issue12) have no formula: the recompute path refuses them.
    if any(e.node.kind == "engine" for e in plan.entries.values()):
        with pytest.raises(EngineComputedError, match="is engine-computed"):
            plan.run()
    else:
        report = plan.run(verify=True)
        assert report.moved == []
        for key in keys:
            assert _same(get_path(model, key), engine_b[key]), key

    # A -> B -> A: bit-exact against the cold start of A, nothing moved.
    reload(model, ckpt_a)
    report = plan.refill(verify=True)
    assert report.moved == []
    cold_a = cold_start(case, ckpt_a)
    for key in keys:
        if key in ptrs:
            assert get_path(model, key) is startup[key], key
        assert _same(get_path(model, key), _value(get_path(cold_a, key))), key
        assert _same(get_path(model, key), engine_a[key]), key


def test_adoption_is_bit_exact_so_operation_order_matters() -> None:
    """vLLM computes g1_scale_c = g1_alphas * (1.0 / a2_scale). The same value written as
    g1_alphas / a2_scale differs in the last bits, and adoption refuses it: the built-in
    formula is vLLM's exact one."""
    case = next(c for c in CASES if c.id == "nvfp4-trtllm-swiglu")
    model = cold_start(case, case.ckpt(0))
    good = "formula: w13_weight_scale_2 * (1.0 / w2_input_scale)"
    text = (ROOT / "specs" / "vllm_moe_nvfp4.yaml").read_text()
    assert good in text
    reordered = load_spec_text(text.replace(good, "formula: w13_weight_scale_2 / w2_input_scale"),
                               "reordered.yaml")
    with pytest.raises(AdoptionError, match=r"g1_scale_c differs from the formula"):
        compile_plan(model, reordered)
    assert len(compile_plan(model, load_spec_text(text, "vllm_moe_nvfp4.yaml"))) > 0


def test_triton_or_deepgemm_has_no_derived_tensors() -> None:
    """TritonOrDeepGemmExperts' inner DeepGemmExperts keeps only config floats (gemm1_alpha=1.0,
    gemm1_beta=0.0, clamp None) and TritonExperts nothing: no built-in spec may bind to it."""
    case = MoECase("fp8-triton-or-deepgemm", Fp8MoEMethod, Fp8MoeBackend.DEEPGEMM,
                   TritonOrDeepGemmExperts, fp8_block_ckpt, set(), {},
                   options={"block_shape": [128, 128]})
    model = cold_start(case, case.ckpt(0))
    experts = model.layers[0].quant_method.moe_kernel.fused_experts
    assert type(experts.experts).__name__ == "DeepGemmExperts"
    assert not any(isinstance(v, torch.Tensor) for v in vars(experts.experts).values())
    assert len(compile_plan(model, SPECS)) == 0


def test_swiglu_constants_are_not_invented_where_vllm_holds_none() -> None:
    """SILU without SwiGLU parameters: the experts hold None; no spec may allocate one."""
    case = MoECase("fp8-flashinfer-cutlass-plain", Fp8MoEMethod, Fp8MoeBackend.FLASHINFER_CUTLASS,
                   FlashInferExperts, fp8_per_tensor_ckpt, set(), {})
    model = cold_start(case, case.ckpt(0))
    experts = model.layers[0].quant_method.moe_kernel.fused_experts
    assert experts.gemm1_alpha is None and experts.gemm1_clamp_limit is None
    plan = compile_plan(model, SPECS)
    assert {e.node.bound.spec.name for e in plan.entries.values()} == {
        "vllm-fp8-flashinfer-cutlass-per-tensor"}
    assert experts.gemm1_alpha is None and experts.gemm1_clamp_limit is None


# ---- Kimi-K3 MLA: reciprocal scale buffers and host scale floats -------------------------------

class _KVCacheQuantConfig:
    """A quant config whose attention layers load q/k/v scales (BaseKVCacheMethod)."""

    online_quantization_config = None

    def __init__(self) -> None:
        self.method = BaseKVCacheMethod(self)

    def get_quant_method(self, layer: nn.Module, prefix: str) -> BaseKVCacheMethod:
        return self.method


class _Linear(nn.Module):
    def __init__(self, out_features: int, in_features: int, bias: bool = False):
        super().__init__()
        self.weight = nn.Parameter(torch.zeros(out_features, in_features), requires_grad=False)
        self.bias = nn.Parameter(torch.zeros(out_features), requires_grad=False) if bias else None
        self.quant_method = UnquantizedLinearMethod()


def _kimi_layer(seed: int) -> MultiHeadLatentAttention:
    """A bare Kimi-K3 MLA layer: the real class, only what its post-load step reads."""
    layer = MultiHeadLatentAttention.__new__(MultiHeadLatentAttention)
    nn.Module.__init__(layer)
    layer.kv_lora_rank, layer.num_local_heads = 16, 2
    layer.qk_nope_head_dim, layer.v_head_dim = 8, 8
    layer.layer_name = "model.layers.0.self_attn"
    layer.kv_cache_dtype = "fp8"
    layer.quant_config = _KVCacheQuantConfig()
    layer.kv_b_proj = _Linear(2 * (8 + 8), 16)
    set_default_quant_scales(layer, register_buffer=True)  # as _init_kv_cache_quant does
    _kimi_load(layer, seed)
    return layer


def _kimi_load(layer: MultiHeadLatentAttention, seed: int) -> None:
    """The attention part of a (re)load: kv-cache scale placeholders, their loaders, the kv-cache
    quant post-load step, then the layer's own post-load step (deferred, on the live layer)."""
    g = _gen(100 + seed)
    with torch.no_grad():
        layer.kv_b_proj.weight.copy_(torch.randn(layer.kv_b_proj.weight.shape, generator=g))
    method = layer.quant_config.method
    method.create_weights(layer)
    for name in ("q_scale", "k_scale", "v_scale"):
        KVCacheScaleParameter.weight_loader(getattr(layer, name), _pos(g, (), 0.05, 0.2))
    method.process_weights_after_loading(layer)
    layer.process_weights_after_loading(torch.float32)


def test_kimi_k3_mla_inverse_scales_and_scale_floats() -> None:
    root = nn.Module()
    root.attn = _kimi_layer(0)
    attn = root.attn
    floats_a = {n: getattr(attn, n) for n in ("_q_scale_float", "_k_scale_float", "_v_scale_float")}
    q_inv = attn._q_scale_inv
    plan = compile_plan(root, SPECS)
    assert sorted(plan.entries) == sorted(
        ["attn._q_scale_inv", "attn._k_scale_inv", "attn._q_scale_float", "attn._k_scale_float",
         "attn._v_scale_float", "attn.W_UV", "attn.W_UK_T"])
    assert plan.entries["attn.W_UV"].adopted and plan.entries["attn.W_UK_T"].adopted
    assert plan.entries["attn._q_scale_inv"].adopted and plan.entries["attn._k_scale_inv"].adopted
    assert plan.entries["attn._q_scale_inv"].storage is q_inv
    assert torch.equal(q_inv, attn._q_scale.reciprocal().reshape(1))
    for name, value in floats_a.items():  # the engine's Python numbers, bit for bit
        assert _same(plan.entries[f"attn.{name}"].storage, value)
        assert _same(getattr(attn, name), value)
    assert "attn._k_scale_float" in plan.not_refillable()
    startup_q, startup_k = attn._q_scale_inv, attn._k_scale_inv
    ptr_q = startup_q.data_ptr()

    _kimi_load(attn, 1)  # new scales; register_buffer replaces both buffers
    assert attn._q_scale_inv is not startup_q
    fresh_q, fresh_k = attn._q_scale_inv.clone(), attn._k_scale_inv.clone()
    assert not torch.equal(fresh_q, startup_q)
    report = plan.refill(verify=True)
    assert report.moved == []
    assert sorted(report.recapture_required) == sorted(
        ["attn._q_scale_float", "attn._k_scale_float", "attn._v_scale_float"])
    assert attn._q_scale_inv is startup_q and attn._k_scale_inv is startup_k
    assert startup_q.data_ptr() == ptr_q
    assert "_q_scale_inv" in attn._non_persistent_buffers_set
    assert torch.equal(startup_q, fresh_q) and torch.equal(startup_k, fresh_k)
    cold_b = _kimi_layer(1)
    for name in ("_q_scale_inv", "_k_scale_inv", "W_UV", "W_UK_T"):
        assert torch.equal(getattr(attn, name), getattr(cold_b, name))
    for name in floats_a:
        assert _same(plan.entries[f"attn.{name}"].storage, getattr(cold_b, name))

    _kimi_load(attn, 0)  # A -> B -> A
    plan.refill(verify=True)
    cold_a = _kimi_layer(0)
    assert attn._q_scale_inv is startup_q
    for name in ("_q_scale_inv", "_k_scale_inv"):
        assert torch.equal(getattr(attn, name), getattr(cold_a, name))
    for name, value in floats_a.items():
        assert _same(plan.entries[f"attn.{name}"].storage, value)


# ---- drafters: fused K/V stacks built by load_weights --------------------------------------------

class _Norm(nn.Module):
    def __init__(self, dim: int):
        super().__init__()
        self.weight = nn.Parameter(torch.zeros(dim, dtype=torch.bfloat16), requires_grad=False)
        self.variance_epsilon = 1e-6


class _Rope(nn.Module):
    def __init__(self, head_dim: int):
        super().__init__()
        self.head_size, self.is_neox_style = head_dim, True
        self.register_buffer("cos_sin_cache", torch.ones(8, head_dim), persistent=False)


class _DraftAttention(nn.Module):
    """What the drafters' K/V builders read from `layer.self_attn`."""

    def __init__(self, hidden: int, heads: int, kv_heads: int, head_dim: int, bias: bool):
        super().__init__()
        self.q_size, self.kv_size = heads * head_dim, kv_heads * head_dim
        self.head_dim, self.num_kv_heads = head_dim, kv_heads
        self.qkv_proj = _Linear(self.q_size + 2 * self.kv_size, hidden, bias).to(torch.bfloat16)
        self.k_proj = _Linear(self.kv_size, hidden, bias).to(torch.bfloat16)
        self.k_norm, self.q_norm, self.qk_norm = _Norm(head_dim), _Norm(head_dim), _Norm(head_dim)
        self.rotary_emb = _Rope(head_dim)
        self.pre_qkv_proj_norm = nn.Identity()
        self.use_k_eq_v = True
        self.attn = object()


class _DraftLayer(nn.Module):
    def __init__(self, hidden: int, bias: bool):
        super().__init__()
        self.self_attn = _DraftAttention(hidden, heads=4, kv_heads=2, head_dim=8, bias=bias)
        self.input_layernorm = _Norm(hidden)


class Drafter(nn.Module):
    """The drafter's ForCausalLM wrapper: `model` is the real vLLM drafter model class."""

    def __init__(self, model_cls: type, num_layers: int, bias: bool):
        super().__init__()
        inner = model_cls.__new__(model_cls)
        nn.Module.__init__(inner)
        inner.layers = nn.ModuleList(_DraftLayer(32, bias) for _ in range(num_layers))
        inner.hidden_norm = _Norm(32)
        self.model = inner

    def load_weights(self, seed: int) -> None:
        """Weight loaders write into the kept Parameters; then, as every drafter's load_weights
        does, `self.model._build_fused_kv_buffers()`."""
        g = _gen(200 + seed)
        with torch.no_grad():
            for _, p in sorted(self.named_parameters()):
                p.copy_(torch.randn(p.shape, generator=g).to(p.dtype))
        self.model._build_fused_kv_buffers()


def _stack(model: nn.Module, path: str, rows: slice | None = None) -> list[torch.Tensor]:
    out = []
    for layer in model.layers:
        t = get_path(layer, path)
        out.append(t[rows] if rows is not None else t)
    return out


DRAFTERS = {
    "qwen3-dflash": (
        DFlashQwen3Model, 11, True,
        {"vllm-dflash-fused-kv-weight", "vllm-dflash-fused-kv-bias", "vllm-dflash-k-norm-weights",
         "vllm-dflash-hidden-norm-weight"},
        {
            "_fused_kv_weight": lambda m: torch.cat(
                _stack(m, "self_attn.qkv_proj.weight", slice(32, None)), 0),
            "_fused_kv_bias": lambda m: torch.cat(
                _stack(m, "self_attn.qkv_proj.bias", slice(32, None)), 0),
            "_k_norm_weights": lambda m: torch.stack(_stack(m, "self_attn.k_norm.weight"), 0),
            "_hidden_norm_weight": lambda m: m.hidden_norm.weight,
        },
    ),
    "laguna-dflash": (
        DFlashLagunaModel, 3, True,
        {"vllm-laguna-dflash-kv-stacks", "vllm-laguna-dflash-kv-biases",
         "vllm-dflash-k-norm-weights"},
        {
            "_kv_weights": lambda m: torch.stack(
                _stack(m, "self_attn.qkv_proj.weight", slice(32, None)), 0),
            "_kv_biases": lambda m: torch.stack(
                _stack(m, "self_attn.qkv_proj.bias", slice(32, None)), 0),
            "_input_layernorm_weights": lambda m: torch.stack(_stack(m, "input_layernorm.weight")),
            "_k_norm_weights": lambda m: torch.stack(_stack(m, "self_attn.k_norm.weight"), 0),
        },
    ),
    "gemma4-dspark": (
        Gemma4DSparkModel, 3, True,
        {"vllm-gemma4-dspark-fused-k", "vllm-gemma4-dspark-fused-k-bias",
         "vllm-dflash-k-norm-weights", "vllm-dflash-hidden-norm-weight"},
        {
            "_fused_k_weight": lambda m: torch.cat(_stack(m, "self_attn.k_proj.weight"), 0),
            "_fused_k_bias": lambda m: torch.cat(_stack(m, "self_attn.k_proj.bias"), 0),
            "_v_norm_weights": lambda m: torch.ones(3, 8, dtype=torch.bfloat16),
            "_k_norm_weights": lambda m: torch.stack(_stack(m, "self_attn.k_norm.weight"), 0),
            "_hidden_norm_weight": lambda m: m.hidden_norm.weight,
        },
    ),
    "muse-spark-dspark": (
        MuseSparkDSparkModel, 3, False, {"vllm-muse-spark-dspark-stacked-kv"},
        {"_stacked_kv_weight": lambda m: torch.stack(
            _stack(m, "self_attn.qkv_proj.weight", slice(32, 64)), 0)},
    ),
}


@pytest.mark.parametrize("name", sorted(DRAFTERS))
def test_drafter_fused_kv_specs(name: str) -> None:
    model_cls, num_layers, bias, spec_names, expected = DRAFTERS[name]
    drafter = Drafter(model_cls, num_layers, bias)
    drafter.load_weights(0)
    keys = sorted(f"model.{k}" for k in expected)
    plan = compile_plan(drafter, SPECS)
    assert sorted(plan.entries) == keys
    assert {e.node.bound.spec.name for e in plan.entries.values()} == spec_names
    for rel, fn in expected.items():
        entry = plan.entries[f"model.{rel}"]
        if entry.node.kind == "alias":  # `.data` of the Parameter: same storage, new object
            assert entry.storage is drafter.model.hidden_norm.weight
        else:
            assert entry.adopted, rel
        assert _same(getattr(drafter.model, rel), fn(drafter.model)), rel
    startup = {k: e.storage for k, e in plan.entries.items()}
    ptrs = {k: t.data_ptr() for k, t in startup.items()}
    a_values = snapshot(drafter, keys)

    drafter.load_weights(1)  # the drafter reload: new fused tensors
    assert any(get_path(drafter, k) is not startup[k] for k in keys)
    b_values = snapshot(drafter, keys)
    report = plan.refill(verify=True)
    assert report.moved == []
    cold_b = Drafter(model_cls, num_layers, bias)
    cold_b.load_weights(1)
    for key in keys:
        assert get_path(drafter, key) is startup[key] and startup[key].data_ptr() == ptrs[key]
        assert _same(startup[key], b_values[key]), key
        assert _same(startup[key], get_path(cold_b, key)), key
    for rel, fn in expected.items():
        assert _same(getattr(drafter.model, rel), fn(drafter.model)), rel
    if "_fused_kv_weight" in expected:  # layer order is numeric: layers.2 before layers.10
        rows = drafter.model.layers[10].self_attn.qkv_proj.weight[32:]
        assert torch.equal(drafter.model._fused_kv_weight[-rows.shape[0]:], rows)

    drafter.load_weights(0)  # A -> B -> A
    plan.refill(verify=True)
    for key in keys:
        assert get_path(drafter, key) is startup[key]
        assert _same(startup[key], a_values[key]), key


def test_every_builtin_vllm_spec_is_exercised() -> None:
    """Each built-in vLLM spec is bound (and so proven against vLLM) by at least one case."""
    exercised = set().union(*(c.specs for c in CASES), *(d[3] for d in DRAFTERS.values()))
    exercised |= {"vllm-kimi-k3-mla-inverse-scales", "vllm-attention-kv-scale-floats",
                  "vllm-kimi-k3-mla-absorbed-kv-b-proj"}
    exercised |= set(MLA_CASES.values()) | {"vllm-mla-dcp-qrep"}
    exercised |= {"vllm-deepseek-v4-rocm-fused-compressor", "vllm-gemma4-mtp-full-lm-head",
                  "vllm-kimi-k3-kda-decode-front"}
    exercised |= {"vllm-glm5next-indexer-gate-fp32", "vllm-glm5next-kda-merged-conv-weight",
                  "vllm-lilicorr-fused-edge", "vllm-lilicorr-inference-buffers",
                  "vllm-kimi-k3-specialized-dense-down-tp16"}
    # bound on a real LlamaForCausalLM's Attention layers by tests/vllm/test_llama.py
    exercised |= {"vllm-attention-host-kv-scales"}
    # issue12: proven on vLLM's own Muse Spark post-load code by tests/vllm/test_muse_spark.py
    exercised |= {"vllm-muse-spark-residual-gate-coefficients",
                  "vllm-muse-spark-router-output-multiplier-fold"}
    # proven on vLLM's own pack_front (through the installed hook) by test_kimi_k3_moe_front.py
    exercised |= {"vllm-kimi-k3-packed-moe-front"}
    names = {s.name for s in SPECS if s.name.startswith("vllm-")}
    assert names == exercised, sorted(names ^ exercised)


# ---- MLA: W_UV / W_UK_T absorbed from kv_b_proj by vLLM's real MLAAttention ---------------------

MLA_CASES = {"bf16": "vllm-mla-absorbed-kv-b-proj",
             "fp8-block": "vllm-mla-absorbed-kv-b-proj-fp8-block"}


class _NoImpl:
    def process_weights_after_loading(self, act_dtype: torch.dtype) -> None:
        pass


class _DcpGroupOfOne:
    """vLLM's GroupCoordinator with world size 1: all_gather returns its input."""

    world_size = 1

    def all_gather(self, x: torch.Tensor, dim: int = -1) -> torch.Tensor:
        return x


def _mla_layer(kind: str, seed: int, dcp: bool = False) -> nn.Module:
    """A bare vLLM MLAAttention: the real class and post-load step, what it reads set by hand."""
    from vllm.model_executor.layers.attention.mla_attention import MLAAttention
    from vllm.model_executor.layers.quantization.fp8 import Fp8LinearMethod

    layer = MLAAttention.__new__(MLAAttention)
    nn.Module.__init__(layer)
    layer.kv_lora_rank, layer.num_heads, layer.qk_nope_head_dim, layer.v_head_dim = 256, 2, 64, 64
    layer.impl, layer.quant_config, layer.layer_name = _NoImpl(), None, "layers.0.mla_attn"
    layer.is_amx_bmm_enabled = False
    layer.is_aiter_triton_fp8_bmm_enabled = layer.is_aiter_triton_fp4_bmm_enabled = False
    layer.dcp_q_replicate, layer.q_pad_num_heads, layer.W_UK_T_dcp_qrep = dcp, None, None
    rows = 2 * (64 + 64)
    proj = _Linear(rows, 256)
    if kind == "fp8-block":
        method = Fp8LinearMethod.__new__(Fp8LinearMethod)
        method.block_quant, method.use_marlin, method.use_deep_gemm = True, False, False
        proj.quant_method, proj.weight_block_size = method, [128, 128]
        proj.weight = nn.Parameter(torch.empty(rows, 256, dtype=torch.float8_e4m3fn),
                                   requires_grad=False)
        proj.weight_scale_inv = nn.Parameter(torch.empty(2, 2), requires_grad=False)
    else:
        proj.weight = nn.Parameter(torch.empty(rows, 256, dtype=torch.bfloat16),
                                   requires_grad=False)
    layer.kv_b_proj = proj
    set_default_quant_scales(layer, register_buffer=True)
    _mla_load(layer, kind, seed)
    return layer


def _mla_load(layer: nn.Module, kind: str, seed: int) -> None:
    g = _gen(300 + seed)
    proj = layer.kv_b_proj
    with torch.no_grad():
        proj.weight.copy_((torch.randn(proj.weight.shape, generator=g) * 0.5).to(proj.weight.dtype))
        if kind == "fp8-block":
            proj.weight_scale_inv.copy_(_pos(g, (2, 2), 0.01, 0.03))
    layer.process_weights_after_loading(torch.bfloat16)


@pytest.mark.parametrize("kind", sorted(MLA_CASES))
def test_mla_absorbed_weights_match_vllm(kind: str, monkeypatch: pytest.MonkeyPatch) -> None:
    import vllm.model_executor.layers.attention.mla_attention as mla_mod

    monkeypatch.setattr(mla_mod, "get_dcp_group", lambda: _DcpGroupOfOne())
    root = nn.Module()
    root.attn = _mla_layer(kind, 0, dcp=True)
    attn = root.attn
    assert attn.W_UV.shape == (2, 256, 64) and attn.W_UK_T.shape == (2, 64, 256)
    mla_specs = [s for s in SPECS if s.name in (MLA_CASES[kind], "vllm-mla-dcp-qrep")]
    assert len(compile_plan(root, SPECS)) == 3 + 3  # + the attention layer's kv-scale floats
    plan = compile_plan(root, mla_specs, require_match=True)
    assert sorted(plan.entries) == ["attn.W_UK_T", "attn.W_UK_T_dcp_qrep", "attn.W_UV"]
    assert all(e.adopted for e in plan.entries.values())  # bit-exact with vLLM's values
    startup = {k: (e.storage, e.storage.data_ptr()) for k, e in plan.entries.items()}
    for seed in (1, 0):  # A -> B -> A: vLLM's post-load step on the live layer, then refill
        _mla_load(attn, kind, seed)
        assert plan.refill(verify=True).moved == []
        cold = _mla_layer(kind, seed, dcp=True)
        for key, (obj, ptr) in startup.items():
            assert get_path(root, key) is obj and obj.data_ptr() == ptr
            assert torch.equal(obj, get_path(cold, key.split(".", 1)[1])), key
    # an in-place reload (no post-load step): the plan recomputes what vLLM would
    with torch.no_grad():
        attn.kv_b_proj.weight.copy_(_mla_layer(kind, 1).kv_b_proj.weight)
        if kind == "fp8-block":
            attn.kv_b_proj.weight_scale_inv.copy_(_mla_layer(kind, 1).kv_b_proj.weight_scale_inv)
    assert plan.run(verify=True).moved == []
    cold = _mla_layer(kind, 1, dcp=True)
    for name in ("W_UV", "W_UK_T", "W_UK_T_dcp_qrep"):
        assert torch.equal(getattr(attn, name), getattr(cold, name)), name


# ---- DeepSeek-V4 ROCm compressor fusion (vLLM's own step, with its `.set_()`) -------------------

def test_deepseek_v4_rocm_fused_compressor_matches_vllm() -> None:
    from types import SimpleNamespace

    with pytest.MonkeyPatch.context() as mp:  # amd.rocm reads the GPU arch at import
        mp.setattr(torch.cuda, "get_device_properties", lambda *a, **k: SimpleNamespace(
            gcnArchName="gfx950", name="stub", major=9, minor=5, total_memory=0,
            multi_processor_count=1))
        from vllm.models.deepseek_v4.amd.rocm import DeepseekV4ROCMAiterMLAAttention

    def linear(rows: int, seed: int) -> nn.Module:
        m = nn.Module()
        m.fused_wkv_wgate = _Linear(rows, 16)
        with torch.no_grad():
            m.fused_wkv_wgate.weight.copy_(torch.randn(rows, 16, generator=_gen(seed)))
        return m

    attn = DeepseekV4ROCMAiterMLAAttention.__new__(DeepseekV4ROCMAiterMLAAttention)
    nn.Module.__init__(attn)
    attn.register_buffer("_fused_compressor_weight", None, persistent=False)
    attn.compressor, attn.indexer = linear(12, 1), nn.Module()
    attn.indexer.compressor = linear(4, 2)
    main = attn.compressor.fused_wkv_wgate.weight.detach().clone()
    indexer = attn.indexer.compressor.fused_wkv_wgate.weight.detach().clone()
    assert attn.prepare_compressor_gemm_fusion() is True
    root = nn.Module()
    root.attn = attn
    plan = compile_plan(root, SPECS)
    entry = plan.entries["attn._fused_compressor_weight"]
    assert entry.adopted and entry.storage is attn._fused_compressor_weight
    assert torch.equal(entry.storage, torch.cat((main, indexer), 0))
    # vLLM's `.set_()`: the indexer Parameter now lives inside the fused storage, at main*K
    w = attn.indexer.compressor.fused_wkv_wgate.weight
    assert w.untyped_storage().data_ptr() == entry.storage.untyped_storage().data_ptr()
    assert w.storage_offset() == main.numel()


# ---- Gemma4 MTP: vLLM's own _get_full_lm_head_weight (TP = 1 here) -----------------------------

def test_gemma4_mtp_full_lm_head_matches_vllm(monkeypatch: pytest.MonkeyPatch) -> None:
    import vllm.model_executor.models.gemma4_mtp as mtp_mod

    monkeypatch.setattr(mtp_mod, "get_tensor_model_parallel_world_size", lambda: 1)
    model = mtp_mod.Gemma4MTP.__new__(mtp_mod.Gemma4MTP)
    nn.Module.__init__(model)
    model.lm_head = _Linear(64, 16)
    embedder = mtp_mod.Gemma4MTPMaskedEmbedder.__new__(mtp_mod.Gemma4MTPMaskedEmbedder)
    nn.Module.__init__(embedder)
    embedder.vocab_size = 60
    model.masked_embedding = embedder
    model._stable_full_lm_head_weight = None
    with torch.no_grad():
        model.lm_head.weight.copy_(torch.randn(64, 16, generator=_gen(1)))
    vllm_value = model._get_full_lm_head_weight().clone()  # TP = 1: an uncached view
    assert model._stable_full_lm_head_weight is None
    plan = compile_plan(model, SPECS)
    cache = plan.entries["_stable_full_lm_head_weight"].storage
    assert torch.equal(cache, vllm_value)
    assert model._get_full_lm_head_weight() is cache  # vLLM now reads the bound cache
    with torch.no_grad():
        model.lm_head.weight.copy_(torch.randn(64, 16, generator=_gen(2)))
    model._stable_full_lm_head_weight = None  # what vLLM's load_weights does
    assert plan.refill(verify=True).moved == []
    assert model._get_full_lm_head_weight() is cache
    assert torch.equal(cache, model.lm_head.weight[:60])


# ---- Kimi-K3 KDA decode front: vLLM's own weight loaders fill the buffers ----------------------

def test_kimi_k3_kda_decode_front_matches_vllm_loaders() -> None:
    from vllm.models.kimi_k3.nvidia import kda as kda_mod

    from derivgraph.examples.reference_kimi_k3_kda import P, build_kda, make_kda_weights

    def vllm_loaders(conv: torch.Tensor, norm: torch.Tensor) -> tuple[Any, Any]:
        return (kda_mod._make_decode_conv1d_weight_loader([P] * 3, 1, 0, conv),
                kda_mod._make_decode_norm_weight_loader(norm))

    model = build_kda(make_kda_weights(1), loaders=vllm_loaders)
    plan = compile_plan(model, SPECS)
    keys = ["self_attn.decode_conv1d_weight", "self_attn.decode_norm_weight"]
    assert sorted(plan.entries) == keys
    assert all(plan.entries[k].adopted for k in keys)  # vLLM's loader values, bit for bit
    model.self_attn.load_weights(make_kda_weights(2), in_place=True)
    assert plan.run(verify=True).moved == []
    cold = build_kda(make_kda_weights(2), loaders=vllm_loaders)
    for k in keys:
        assert torch.equal(get_path(model, k), get_path(cold, k)), k


# ---- GLM-5-next: vLLM's own first forward builds _wp_fp32 / _merged_conv_weight ----------------

class _StopAfterCache(Exception):
    """Raised by the first kernel after the cached tensor is built (the kernels need a GPU)."""


class _Proj(nn.Module):
    """A ReplicatedLinear stand-in: ``(x @ weight.T, None)``."""

    def __init__(self, weight: torch.Tensor) -> None:
        super().__init__()
        self.weight = nn.Parameter(weight.clone(), requires_grad=False)

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, None]:
        return torch.nn.functional.linear(x, self.weight), None


class _Conv(nn.Module):
    """A conv1d ColumnParallelLinear stand-in whose ``bias``, read right after the merged weight
    is cached, stops vLLM's ``_forward`` before the causal-conv kernel."""

    def __init__(self, weight: torch.Tensor) -> None:
        super().__init__()
        self.weight = nn.Parameter(weight.clone(), requires_grad=False)

    @property
    def bias(self) -> None:
        raise _StopAfterCache


def _vllm_glm5next_root(weights: dict[str, torch.Tensor], mp: pytest.MonkeyPatch) -> nn.Module:
    """vLLM's Indexer and Glm5NextLinearAttention (bare instances), run through their own
    forward until the cache is built."""
    import types

    from vllm.models.glm5next.common import attention as attn_mod
    from vllm.models.glm5next.common import kda as kda_mod

    from derivgraph.examples.reference_glm5next import HEAD_DIM, HIDDEN, N_HEAD, C, P

    def stop(*args: Any, **kwargs: Any) -> None:
        raise _StopAfterCache

    indexer = attn_mod.Indexer.__new__(attn_mod.Indexer)
    nn.Module.__init__(indexer)
    indexer.head_dim, indexer.n_head, indexer._wp_fp32 = HEAD_DIM, N_HEAD, None
    indexer.wq_b = _Proj(torch.zeros(HEAD_DIM * N_HEAD, 4, dtype=torch.bfloat16))
    indexer.wk_weights_proj = _Proj(weights["indexer.wk_weights_proj.weight"])
    indexer.k_norm = nn.LayerNorm(HEAD_DIM)
    mp.setattr(attn_mod, "_fused_indexer_k_norm", stop)
    with pytest.raises(_StopAfterCache):
        indexer.forward(torch.zeros(2, HIDDEN, dtype=torch.bfloat16),
                        torch.zeros(2, 4, dtype=torch.bfloat16), None, None)

    kda = kda_mod.Glm5NextLinearAttention.__new__(kda_mod.Glm5NextLinearAttention)
    nn.Module.__init__(kda)
    kda.local_projection_size, kda.conv_size, kda.prefix = P, C, "linear_attn"
    kda.q_conv1d, kda.k_conv1d, kda.v_conv1d = (
        _Conv(weights[f"linear_attn.{n}_conv1d.weight"]) for n in "qkv")
    kda._merged_conv_weight, kda._conv_state_dim_first = None, True
    kda.kda_safe_gate, kda.kda_lower_bound = True, -5.0
    kda.kv_cache = (torch.zeros(1, 3 * P, C - 1), torch.zeros(1))
    meta = types.SimpleNamespace(
        has_initial_state=None, non_spec_query_start_loc=None,
        non_spec_state_indices_tensor=None, num_actual_tokens=1, spec_sequence_masks=None,
        spec_query_start_loc=None, spec_state_indices_tensor=None, spec_token_indx=None,
        non_spec_token_indx=None, num_accepted_tokens=None, num_spec_decodes=0)
    mp.setattr(kda_mod, "GDNAttentionMetadata", types.SimpleNamespace)
    mp.setattr(kda_mod, "get_forward_context",
               lambda: types.SimpleNamespace(attn_metadata={"linear_attn": meta}))
    with pytest.raises(_StopAfterCache):
        kda._forward(torch.zeros(1, 3 * P), torch.zeros(1, 1, 1, 1), torch.zeros(1, 1, 1),
                     torch.zeros(1))

    root = nn.Module()
    root.indexer, root.linear_attn = indexer, kda
    return root


def test_glm5next_caches_match_vllm_first_forward() -> None:
    from derivgraph.examples.reference_glm5next import load_in_place, make_glm5next_weights

    keys = ["indexer._wp_fp32", "linear_attn._merged_conv_weight"]
    with pytest.MonkeyPatch.context() as mp:
        model = _vllm_glm5next_root(make_glm5next_weights(1), mp)
        plan = compile_plan(model, SPECS)
        assert sorted(plan.entries) == keys
        assert all(plan.entries[k].adopted for k in keys)  # vLLM's values, bit for bit
        startup = {k: get_path(model, k) for k in keys}
        for seed in (2, 1):
            load_in_place(model, make_glm5next_weights(seed))
            assert plan.run(verify=True).moved == []
            cold = _vllm_glm5next_root(make_glm5next_weights(seed), mp)
            for k in keys:
                assert get_path(model, k) is startup[k], k
                assert torch.equal(get_path(model, k), get_path(cold, k)), (k, seed)


# ---- LiLiCorr head: vLLM's own materialize_inference_buffers -----------------------------------

LILICORR_KEYS = ["lilicorr._attn_bias", "lilicorr._factor_input_splits.0",
                 "lilicorr._factor_input_splits.1", "lilicorr._factor_input_splits.2",
                 "lilicorr._fused_edge_bias", "lilicorr._fused_edge_weight",
                 "lilicorr._is_top1_col", "lilicorr._rank_frac_col"]


def _vllm_lilicorr_root(seed: int, topk: int = 2, dtype: torch.dtype = torch.bfloat16
                        ) -> nn.Module:
    """vLLM's LiLiCorrHead (bare instance) holding the reference head's modules and Parameters,
    loaded and materialized by vLLM's own ``materialize_inference_buffers``."""
    from vllm.model_executor.models.lilicorr import LiLiCorrHead

    from derivgraph.examples.reference_lilicorr import build_lilicorr, make_lilicorr_weights

    ref = build_lilicorr(make_lilicorr_weights(seed, dtype), topk=topk).lilicorr
    head = LiLiCorrHead.__new__(LiLiCorrHead)
    nn.Module.__init__(head)
    for name in ("hidden_size", "factor_dim", "block_size", "num_candidate_slots",
                 "candidate_topk", "num_heads"):
        setattr(head, name, getattr(ref, name))
    for name in ("out_head", "in_head", "factor_input_proj"):
        setattr(head, name, getattr(ref, name))
    for name in ("slot_embedding", "relative_slot_bias", "same_slot_bias"):
        setattr(head, name, getattr(ref, name))
    head.materialize_inference_buffers(head.slot_embedding.device, head.slot_embedding.dtype)
    root = nn.Module()
    root.lilicorr = head
    return root


def _bits(a: torch.Tensor, b: torch.Tensor) -> bool:
    from derivgraph.planner import bits_equal

    return a.dtype == b.dtype and a.shape == b.shape and a.stride() == b.stride() \
        and bits_equal(a, b)


@pytest.mark.parametrize(("topk", "dtype"), [(2, torch.bfloat16), (1, torch.float32),
                                             (4, torch.float16)])
def test_lilicorr_every_buffer_matches_vllm_materialize(topk: int, dtype: torch.dtype) -> None:
    """Conformance: the spec's values are vLLM's, bit for bit (compile adopts vLLM's tensors,
    and an eager evaluation of every formula equals them); then A -> B -> A with different
    weights through vLLM's own step (refill) and through an in-place load (recompute): 0 moved,
    the startup tensors and the startup tuple object kept, bit-exact with a cold start."""
    from derivgraph.examples.reference_lilicorr import load_lilicorr, make_lilicorr_weights

    model = _vllm_lilicorr_root(1, topk, dtype)
    head = model.lilicorr
    plan = compile_plan(model, SPECS)
    assert sorted(plan.entries) == LILICORR_KEYS
    assert all(plan.entries[k].adopted for k in LILICORR_KEYS)
    values = plan.evaluate()
    for k in LILICORR_KEYS:  # every formula, evaluated eagerly, is vLLM's value bit for bit
        assert _bits(values[k].contiguous(), get_path(model, k)), k
    assert head._attn_bias.shape == (2, 3 * topk, 3 * topk)
    assert "arange" not in plan.source() and "repeat_interleave" not in plan.source()
    startup = {k: (get_path(model, k), get_path(model, k).data_ptr()) for k in LILICORR_KEYS}
    splits = head._factor_input_splits
    for seed, engine in ((2, True), (1, False), (2, False), (1, True)):
        load_lilicorr(model, make_lilicorr_weights(seed, dtype), materialize=False)
        if engine:  # vLLM's load_weights ends with this: new tensors and a new tuple
            head.materialize_inference_buffers(head.slot_embedding.device,
                                               head.slot_embedding.dtype)
            assert head._attn_bias is not startup["lilicorr._attn_bias"][0]
            assert head._factor_input_splits is not splits
            report = plan.refill(verify=True)
        else:
            report = plan.run(verify=True)
        assert report.moved == []
        assert head._factor_input_splits is splits
        cold = _vllm_lilicorr_root(seed, topk, dtype)
        for k in LILICORR_KEYS:
            obj, ptr = startup[k]
            assert get_path(model, k) is obj and obj.data_ptr() == ptr, k
            assert _bits(obj, get_path(cold, k)), (k, seed, engine)
    plan.run(verify=True)  # idempotent
    cold = _vllm_lilicorr_root(1, topk, dtype)
    assert all(_bits(get_path(model, k), get_path(cold, k)) for k in LILICORR_KEYS)


def test_lilicorr_attention_bias_gather_differs_per_distance() -> None:
    """Canary for the formula's offset: a bias table with one value per distance makes every
    (q, k) entry name its slot distance, so a gather one slot off cannot match vLLM."""
    model = _vllm_lilicorr_root(1)
    head = model.lilicorr
    with torch.no_grad():
        head.relative_slot_bias.copy_(torch.arange(7, dtype=torch.bfloat16).expand(2, 7))
        head.same_slot_bias.fill_(100.0)
    head.materialize_inference_buffers(torch.device("cpu"), torch.bfloat16)
    slot = torch.arange(3).repeat_interleave(2)
    want = (slot.view(-1, 1) - slot.view(1, -1) + 3).to(torch.bfloat16)
    want = want + 100.0 * (slot.view(-1, 1) == slot.view(1, -1)).to(torch.bfloat16)
    assert torch.equal(head._attn_bias, want.expand(2, 6, 6))  # vLLM's own value
    spec = next(s for s in SPECS if s.name == "vllm-lilicorr-inference-buffers")
    off_by_one = spec.model_copy(deep=True)
    off_by_one.derived[0].formula = spec.derived[0].formula.replace("block_size - 1",
                                                                    "block_size - 2")
    with pytest.raises(AdoptionError, match="_attn_bias"):
        compile_plan(model, [off_by_one])
    plan = compile_plan(model, [spec])
    with torch.no_grad():
        head.same_slot_bias.fill_(-3.0)  # an in-place load: vLLM's buffer goes stale
    plan.run(verify=True)
    vllm_value = head._build_attention_bias(device=torch.device("cpu"), dtype=torch.bfloat16)
    assert torch.equal(head._attn_bias, vllm_value)
    assert not torch.equal(vllm_value, want.expand(2, 6, 6))


# ---- Kimi-K3 specialized decode, TP16: vLLM's own PreparedDenseMLP pads the down projection ----

class _PreparedProjection:
    """Stands in for the CuTe GEMM (compiled on a GPU): keeps the weight vLLM hands it."""

    def __init__(self, weight: torch.Tensor, policies: Any, **kwargs: Any) -> None:
        self.weight = weight

    def prepare(self) -> _PreparedProjection:
        return self


def _vllm_dense_root(seed: int, mp: pytest.MonkeyPatch) -> nn.Module:
    import types

    from vllm.models.kimi_k3.nvidia.specialized_decode.cutedsl.moe import dense

    from derivgraph.examples.reference_kimi_k3_dense import (
        build_kimi_k3_dense,
        make_kimi_k3_dense_weights,
    )

    mp.setattr(dense, "PreparedProjection", _PreparedProjection)
    mp.setattr(dense, "_compile_activation", lambda *args: None)
    mp.setattr(dense, "architecture", lambda device: "sm_100")
    model = build_kimi_k3_dense(make_kimi_k3_dense_weights(seed))
    mlp = model.model.layers[0].mlp
    mlp.act_fn = types.SimpleNamespace(beta=1.0, linear_beta=None)
    model.specialized_decode.feed_forward[0] = dense.PreparedDenseMLP(mlp, (8,))
    return model


def test_kimi_k3_dense_down_tp16_matches_vllm_prepared_dense_mlp() -> None:
    from derivgraph.examples.reference_kimi_k3_dense import (
        load_in_place,
        make_kimi_k3_dense_weights,
    )

    key = "specialized_decode.feed_forward.0.down.weight"
    with pytest.MonkeyPatch.context() as mp:
        model = _vllm_dense_root(1, mp)
        assert model.specialized_decode.feed_forward[0].padded == 128  # vLLM padded 40 -> 128
        plan = compile_plan(model, SPECS)
        assert sorted(plan.entries) == [key]
        assert plan.entries[key].adopted  # vLLM's padded copy, bit for bit
        startup = get_path(model, key)
        for seed in (2, 1):
            load_in_place(model, make_kimi_k3_dense_weights(seed))
            assert plan.run(verify=True).moved == []
            assert get_path(model, key) is startup
            assert torch.equal(startup, get_path(_vllm_dense_root(seed, mp), key)), seed
