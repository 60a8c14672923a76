"""Cases for the undeclared error classes of ``derivgraph audit static --package vllm``.

Each class whose stores the static audit calls an undeclared error gets one case here: either
vLLM's real code for it is built on CPU and reloaded (the case runs and its census judges the
findings), or the case *tries* that code and reports what stopped it (the exception and the
vLLM frames, :mod:`vllm_integration.blockers`). Where vLLM asks the platform a yes/no question
whose CPU answer skips the code under audit (is ROCm's bf16x3 router supported, is the
B12X/CuTe kernel supported, is this an XPU), the case answers yes for the duration of
the try and says so in :data:`PLATFORM_ANSWERS`; nothing else of vLLM is patched.
"""

from __future__ import annotations

import contextlib
import dataclasses
import importlib
from collections.abc import Callable, Iterator

import torch
from torch import nn

from vllm_integration import case_base as b
from vllm_integration import class_layers as att
from vllm_integration.blockers import attempt
from vllm_integration.class_attempts import ATTEMPTS
from vllm_integration.class_models import CPU_ATTENTION, model_cases
from vllm_integration.loader_cases import loader_cases

__all__ = ["PLATFORM_ANSWERS", "class_cases"]

E, H, N = b.E, b.H, b.N
_EX = "vllm.model_executor.layers.fused_moe.experts"
_GATE = "vllm.model_executor.layers.fused_moe.router.gate_linear"
_RUNNER = "vllm.model_executor.layers.fused_moe.runner.moe_runner.MoERunner"
_KIMI = "vllm.models.kimi_k3.nvidia.specialized_decode.cutedsl"

#: case -> the platform questions it answers "yes" (everything else is vLLM as installed)
PLATFORM_ANSWERS: dict[str, str] = {
    "router-gate-bf16x3": "bf16x3_router_gemm_rocm.platform_supported() (a ROCm-only tier)",
    "mxfp8-linear-xpu-bmm": "the kernel's is_supported() (current_platform.is_xpu())",
    "fp8-block-linear-xpu-bmm": "the kernel's is_supported() (current_platform.is_xpu())",
    "nvfp4-linear-b12x": "the kernel's is_supported() (its constructor asserts a CUDA SM12x)",
    "nvfp4-linear-flint": "the kernel's is_supported() (its constructor asserts CUDA)",
    "muse-spark-nvfp4-moe": "MarlinExperts.is_supported_config() and "
                            "is_device_capability_family(90) (Hopper, with --moe-backend marlin)",
    "dflash2-beam-context-kv": CPU_ATTENTION,
    "kimi-k3-dspark-context-kv": CPU_ATTENTION,
}


@contextlib.contextmanager
def _answer(target: object, name: str, value: object) -> Iterator[None]:
    """``target.name`` is ``value`` for the duration (an inherited one is inherited again)."""
    own = vars(target)
    had, original = name in own, own.get(name)
    setattr(target, name, value)
    try:
        yield
    finally:
        if had:
            setattr(target, name, original)
        else:
            delattr(target, name)


def _load(qualified: str) -> object:
    module, _, name = qualified.rpartition(".")
    return getattr(importlib.import_module(module), name)


# ---- runnable: experts, router gate, MoE runner ---------------------------------------------

_NVFP4_B12X = {"w13_weight": ((E, 2 * N, H // 2), torch.uint8), **b.NVFP4}


_nvfp4_b12x_qc = b.nvfp4_qc("FLASHINFER_B12X")


@contextlib.contextmanager
def _rocm_bf16x3() -> Iterator[None]:
    from vllm.model_executor.layers.fused_moe.router import bf16x3_router_gemm_rocm as rocm

    with b.vllm_runtime(), _answer(rocm, "platform_supported", lambda: True):
        yield


def _gate_layer() -> nn.Module:
    """vLLM's GateLinear with an fp32 router weight and fp32 logits: ROCm's bf16x3 tier."""
    gate = _load(f"{_GATE}.GateLinear")(H, E, out_dtype=torch.float32,
                                        params_dtype=torch.float32)
    assert type(gate.quant_method).__name__ == "_GateLinearMethod", type(gate.quant_method)
    return gate


class _Router(nn.Module):
    """Stands in for the router and routed experts, which the gate fusion never reads."""


def _runner_layer() -> nn.Module:
    """vLLM's MoERunner with a router gate and a shared-expert gate (the fused-gate path)."""
    from vllm.model_executor.layers.linear import ReplicatedLinear

    _runner_layer.count += 1  # type: ignore[attr-defined]
    return _load(_RUNNER)(
        f"layers.{_runner_layer.count}.mlp", b.moe_config(), router=_Router(),  # type: ignore[attr-defined]
        routed_experts=_Router(),
        gate=ReplicatedLinear(H, E, bias=False, params_dtype=torch.bfloat16),
        shared_expert_gate=ReplicatedLinear(H, 1, bias=False, params_dtype=torch.bfloat16))


_runner_layer.count = 0  # type: ignore[attr-defined]


def _fuse_gates(layer: nn.Module) -> None:
    """What MoERunner's forward does first (moe_runner.py:909) when both gates are set."""
    layer._maybe_fuse_gate_weights()


# ---- tried: vLLM's real code up to the first failure ----------------------------------------

def _nvfp4_linear_layer() -> nn.Module:
    g = torch.Generator().manual_seed(0)
    layer = nn.Module()
    for name, shape, dtype in (("weight", (N, H // 2), torch.uint8),
                               ("weight_scale", (N, H // 16), torch.float8_e4m3fn),
                               ("weight_global_scale", (), torch.float32),
                               ("input_global_scale", (), torch.float32),
                               ("alpha", (), torch.float32)):
        layer.register_parameter(name, nn.Parameter(b.random_tensor(shape, dtype, name, g),
                                                    requires_grad=False))
    layer.output_size_per_partition, layer.input_size_per_partition = N, H
    return layer


def _kernel(qualified: str, config: object) -> object:
    """The kernel ``qualified`` built past its platform assertion (``is_supported``)."""
    cls = _load(qualified)
    with _answer(cls, "is_supported", classmethod(lambda c, cc=None: (True, None))):
        return cls(config)


def _kernel_post_load(qualified: str) -> Callable[[], None]:
    """Build the kernel past its platform assertion and run its post-load step."""
    def run() -> None:
        from vllm.model_executor.kernels.linear.nvfp4.base import NvFp4LinearLayerConfig

        _kernel(qualified, NvFp4LinearLayerConfig()).process_weights_after_loading(
            _nvfp4_linear_layer())

    return run


_XPU = "vllm.model_executor.kernels.linear"
_MXFP8_XPU = f"{_XPU}.mxfp8.xpu.XPUMxFp8LinearKernel"
_FP8_BLOCK_XPU = f"{_XPU}.scaled_mm.xpu.XPUFp8BlockScaledMMKernel"
_BMM = 2  # the groups of a grouped (bmm) linear layer, e.g. DeepSeek's wo_a


def _bmm_post_load(make_kernel: Callable[[], object]) -> b.PostLoad:
    """The XPU kernel's post-load on a grouped layer (``is_bmm``, ``bmm_batch_size``: what
    the kernel reads to precompute its batched weight and scale)."""
    def post_load(method: nn.Module, layer: nn.Module) -> None:
        layer.is_bmm, layer.bmm_batch_size = True, _BMM
        make_kernel().process_weights_after_loading(layer)

    return post_load


def _mxfp8_xpu() -> object:
    from vllm.model_executor.kernels.linear.mxfp8.Mxfp8LinearKernel import (
        Mxfp8LinearLayerConfig,
    )

    return _kernel(_MXFP8_XPU, Mxfp8LinearLayerConfig((N, H), bmm_batch_size=_BMM))


def _fp8_block_xpu() -> object:
    from vllm.model_executor.kernels.linear.scaled_mm.ScaledMMLinearKernel import (
        FP8ScaledMMLinearLayerConfig,
    )
    from vllm.model_executor.layers.quantization.utils import quant_utils as q

    return _kernel(_FP8_BLOCK_XPU, FP8ScaledMMLinearLayerConfig(
        weight_quant_key=q.kFp8Static128BlockSym, activation_quant_key=q.kFp8Dynamic128Sym,
        weight_shape=(H, H), input_dtype=torch.bfloat16, out_dtype=torch.bfloat16))


_MXFP8 = {"weight": ((N, H), torch.float8_e4m3fn), "weight_scale": ((N, H // 32), torch.uint8)}
# 128x128 blocks: two blocks of rows, one per bmm group
_FP8_BLOCK = {"weight": ((H, H), torch.float8_e4m3fn),
              "weight_scale_inv": ((H // 128, H // 128), torch.float32)}


def _mxfp4_moe(make: Callable[[nn.Module], object]) -> Callable[[], None]:
    """Build the MXFP4 MoE method on the case's MoE config (its constructor picks the backend
    whose post-load makes the stores)."""
    def run() -> None:
        with b.vllm_runtime():
            make(b.moe_config())

    return run


_MXFP4 = "vllm.model_executor.layers.quantization"
#: class qualified name -> (case name, the constructor tried)
_MXFP4_MOE: dict[str, tuple[str, Callable[[nn.Module], object]]] = {
    f"{_MXFP4}.mxfp4.GptOssMxfp4MoEMethod":
        ("mxfp4-moe-gpt-oss", lambda moe: _load(f"{_MXFP4}.mxfp4.GptOssMxfp4MoEMethod")(moe)),
    f"{_MXFP4}.mxfp4.Mxfp4MoEMethod":
        ("mxfp4-moe", lambda moe: _load(f"{_MXFP4}.mxfp4.Mxfp4MoEMethod")(moe)),
    f"{_MXFP4}.online.mxfp4.Mxfp4OnlineMoEMethod":
        ("mxfp4-moe-online",
         lambda moe: _load(f"{_MXFP4}.online.mxfp4.Mxfp4OnlineMoEMethod")(moe=moe)),
}


def _wna8o8() -> None:
    from vllm.model_executor.layers.quantization.compressed_tensors.schemes import (
        compressed_tensors_wNa8o8 as m,
    )

    with b.vllm_runtime():
        scheme = m.CompressedTensorsWNA8O8Int(8, "channel", has_input_act=True,
                                              has_output_act=True, quant_format="int-quantized")
        layer = nn.Module()
        scheme.create_weights(layer, output_size=N, input_size=H, output_partition_sizes=[N],
                              input_size_per_partition=H, params_dtype=torch.bfloat16,
                              weight_loader=lambda p, w: p.data.copy_(w))
        scheme.process_weights_after_loading(layer)


def _ark_moe() -> None:
    from vllm.model_executor.layers.quantization.inc.schemes.inc_wna16_moe import (
        INCARKWNA16MoEMethod,
    )
    from vllm.model_executor.layers.quantization.moe_wna16 import MoeWNA16Config

    with b.vllm_runtime():
        INCARKWNA16MoEMethod(MoeWNA16Config("gptq", 4, 128, False, False, None, {}),
                             b.moe_config())


def _modelopt_gather() -> None:
    from vllm.model_executor.layers.quantization import modelopt as m
    from vllm.model_executor.layers.quantization.utils.quant_utils import kNvfp4Static

    with b.vllm_runtime():
        method = m.ModelOptLinearMethod(m.QuantSpec(weight=kNvfp4Static, activation=None),
                                        m.CkptCtx(group_size=16))
        layer = nn.Module()
        layer._retain_weight_for_gather = True
        method.create_weights(layer, input_size_per_partition=H, output_partition_sizes=[N],
                              input_size=H, output_size=N, params_dtype=torch.bfloat16,
                              weight_loader=lambda p, w: p.data.copy_(w))
        method.process_weights_after_loading(layer)


def _modelopt_block_linear() -> None:
    """The b12x block-quantized dense method (its post-load packs the weight for b12x)."""
    from vllm.model_executor.layers.quantization.modelopt_block_quant import (
        ModelOptBlockQuantLinearMethod,
    )

    with b.vllm_runtime():
        ModelOptBlockQuantLinearMethod()


def _flint_experts() -> None:
    """Flint's NVFP4 experts, loaded expert by expert; the last weight triggers the repack
    that FlintSparseMoeBlock.forward_ll's cache (``_ll_weights``) is built from."""
    from vllm.models.flint.ops.moe import FlintNvfp4Experts

    experts = FlintNvfp4Experts(E, H, N, 2)
    shapes = {"weight": (torch.uint8, 2), "weight_scale": (torch.float8_e4m3fn, 16)}
    g = torch.Generator().manual_seed(0)
    for e in range(E):
        for proj, (rows, cols) in (("gate_proj", (N, H)), ("up_proj", (N, H)),
                                   ("down_proj", (H, N))):
            for kind, (dtype, per) in shapes.items():
                experts.load_weights([(f"{e}.{proj}.{kind}",
                                       b.random_tensor((rows, cols // per), dtype, kind, g))])
            experts.load_weights([(f"{e}.{proj}.weight_scale_2", torch.tensor(1.0))])


def _step5_experts() -> None:
    from vllm.config import get_current_vllm_config
    from vllm.models.step5.nvidia.mega_moe import Step5MegaMoEExperts

    with b.vllm_runtime():
        config = get_current_vllm_config()
        config.parallel_config.enable_expert_parallel = True  # it refuses to run without EP
        experts = Step5MegaMoEExperts(config, num_experts=E, top_k=2, hidden_size=H,
                                      intermediate_size=N, quant_config=None,
                                      activation="silu", activation_clamp=None,
                                      prefix="layers.0.mlp.experts")
        experts.quant_method.process_weights_after_loading(experts)  # -> prepare_weights()


_MUSE = "vllm.models.muse_spark.nvidia.muse_moe_runner.MuseSparkModelOptNvFp4FusedMoE"


def _muse_spark() -> None:
    """The MoE method MuseSparkRoutedExperts builds for an NVFP4 ModelOpt checkpoint, on its
    Hopper Marlin path (the one making the store): built, weights created and loaded, then
    its post-load step."""
    from vllm.model_executor.layers.fused_moe.experts.marlin_moe import MarlinExperts
    from vllm.model_executor.layers.quantization.modelopt import ModelOptNvFp4Config
    from vllm.model_executor.model_loader.weight_utils import default_weight_loader
    from vllm.platforms import current_platform

    moe = dataclasses.replace(b.moe_config(), moe_backend="marlin")  # --moe-backend marlin
    with b.vllm_runtime(), \
            _answer(MarlinExperts, "is_supported_config", lambda *a, **k: (True, None)), \
            _answer(type(current_platform), "is_device_capability_family",
                    classmethod(lambda cls, family, device_id=0: family == 90)):
        config = ModelOptNvFp4Config.from_config({"quantization": {
            "quant_algo": "NVFP4", "group_size": 16, "exclude_modules": [],
            "kv_cache_quant_algo": None}})
        method = _load(_MUSE)(config, moe)
        layer = nn.Module()  # what prepare_nvfp4_moe_layer_for_marlin reads of RoutedExperts
        layer.hidden_size, layer.intermediate_size_per_partition = H, N
        method.create_weights(layer, num_experts=E, hidden_size=H,
                              intermediate_size_per_partition=N, params_dtype=torch.bfloat16,
                              weight_loader=default_weight_loader)
        g = torch.Generator().manual_seed(0)
        for name, p in layer.named_parameters():
            p.data.copy_(b.random_tensor(tuple(p.shape), p.dtype, name, g))
        method.process_weights_after_loading(layer)


_MLA = "vllm.v1.attention.backends.mla"
#: (case, MLA impl, its metadata class, query dtype, where its first decode step needs a GPU)
_MLA_DECODE = (
    ("mla-flashinfer", f"{_MLA}.flashinfer_mla.FlashInferMLAImpl",
     f"{_MLA}.flashinfer_mla.FlashInferMLAMetadata", torch.bfloat16, "_get_workspace_buffer"),
    ("mla-tokenspeed", f"{_MLA}.tokenspeed_mla.TokenspeedMLAImpl",
     "vllm.model_executor.layers.attention.mla_attention.MLACommonMetadata",
     torch.float8_e4m3fn, "_get_workspace"),
)


# ---- the cases --------------------------------------------------------------------------

def _tried(name: str, classes: tuple[str, ...], run: Callable[[], object]) -> b.VllmCase:
    return b.VllmCase(name, classes,
                      not_runnable=attempt(classes[0].rpartition(".")[2], run))


def class_cases() -> list[b.VllmCase]:
    """The cases of the undeclared error classes (``int8-moe-zen-cpu`` is in builders)."""
    b12x = f"{_EX}.flashinfer_b12x_moe.FlashInferB12xExperts"
    return [
        b.VllmCase("nvfp4-moe-flashinfer-b12x", (b12x,), _NVFP4_B12X,
                   b.experts(b12x, _nvfp4_b12x_qc, experts_post_load=True)),
        b.VllmCase("router-gate-bf16x3", (f"{_GATE}._GateLinearMethod",),
                   {"weight": ((E, H), torch.float32)}, layer=_gate_layer, patch=_rocm_bf16x3),
        b.VllmCase("moe-runner-fused-gate", (_RUNNER,),
                   {"gate.weight": ((E, H), torch.bfloat16),
                    "shared_expert_gate.weight": ((1, H), torch.bfloat16)},
                   layer=_runner_layer, first_forward=_fuse_gates, patch=b.vllm_runtime),
        b.VllmCase("mxfp8-linear-xpu-bmm", (_MXFP8_XPU,), _MXFP8, _bmm_post_load(_mxfp8_xpu)),
        b.VllmCase("fp8-block-linear-xpu-bmm", (_FP8_BLOCK_XPU,), _FP8_BLOCK,
                   _bmm_post_load(_fp8_block_xpu), patch=b.vllm_runtime),
        *(_tried(name, (qualified,), _mxfp4_moe(make)) for qualified, (name, make) in
          _MXFP4_MOE.items()),
        _tried("nvfp4-linear-b12x",
               ("vllm.model_executor.kernels.linear.nvfp4.b12x.B12xNvFp4W4A16LinearKernel",),
               _kernel_post_load(
                   "vllm.model_executor.kernels.linear.nvfp4.b12x.B12xNvFp4W4A16LinearKernel")),
        _tried("nvfp4-linear-flint", ("vllm.models.flint.ops.linear.FlintNvFp4LinearKernel",),
               _kernel_post_load("vllm.models.flint.ops.linear.FlintNvFp4LinearKernel")),
        _tried("wna8o8-int-linear", ("vllm.model_executor.layers.quantization.compressed_tensors"
                                     ".schemes.compressed_tensors_wNa8o8"
                                     ".CompressedTensorsWNA8O8Int",), _wna8o8),
        _tried("wna16-moe-inc-ark", ("vllm.model_executor.layers.quantization.inc.schemes"
                                     ".inc_wna16_moe.INCARKWNA16MoEMethod",), _ark_moe),
        _tried("nvfp4-linear-modelopt-gather",
               ("vllm.model_executor.layers.quantization.modelopt.ModelOptLinearMethod",),
               _modelopt_gather),
        _tried("block-linear-modelopt-b12x",
               ("vllm.model_executor.layers.quantization.modelopt_block_quant"
                ".ModelOptBlockQuantLinearMethod",), _modelopt_block_linear),
        _tried("flint-sparse-moe-ll", ("vllm.models.flint.model.FlintSparseMoeBlock",),
               _flint_experts),
        b.VllmCase("kimi-k3-prepared-kda", (f"{_KIMI}.kda.prepared.PreparedKda",),
                   {**att.KDA, **att.KV_SCALES}, layer=lambda: att.kv_scaled_layer(att.KDA),
                   first_forward=att.prepared_kda, once=True),
        b.VllmCase("kimi-k3-prepared-mla", (f"{_KIMI}.mla.prepared.PreparedMla",),
                   {**att.MLA, **att.KV_SCALES}, layer=lambda: att.kv_scaled_layer(att.MLA),
                   first_forward=att.prepared_mla, once=True),
        b.VllmCase("kimi-k3-prepared-projection", (f"{_KIMI}.gemm.projection.PreparedProjection",),
                   att.DENSE_DOWN, lambda qm, layer: None,  # an unquantized layer's step
                   first_forward=att.prepared_projection, once=True),
        b.VllmCase("mla-flashinfer-sparse", (f"{_MLA}.flashinfer_mla_sparse"
                                              ".FlashInferMLASparseImpl",),
                   att.KV_SCALES, layer=att.mla_layer(f"{_MLA}.flashinfer_mla_sparse"
                                                      ".FlashInferMLASparseImpl"),
                   first_forward=att.prepare_mqa, patch=b.vllm_runtime),
        *(b.VllmCase(name, (impl,), att.KV_SCALES, layer=att.mla_layer(impl),
                     first_forward=att.decode_step(metadata, q_dtype), forward_stop=stop,
                     patch=b.vllm_runtime)
          for name, impl, metadata, q_dtype, stop in _MLA_DECODE),
        *model_cases(),
        *loader_cases(),
        _tried("muse-spark-nvfp4-moe", (_MUSE,), _muse_spark),
        *(_tried(name, (qualified,), run) for qualified, (name, run) in ATTEMPTS.items()),
        _tried("nvfp4-moe-step5-mega", ("vllm.models.step5.nvidia.mega_moe.Step5MegaMoEExperts",),
               _step5_experts),
    ]

