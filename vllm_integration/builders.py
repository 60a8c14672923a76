"""vLLM 0.33.0 layers built at tiny shapes on CPU, with vLLM's own code: the executable cases.

Contract (used by ``derivgraph audit vllm`` and by the trace engine; keep it stable)::

    @dataclass(frozen=True)
    class VllmCase:
        name: str                     # e.g. "fp8-moe-cutlass"
        classes: tuple[str, ...]      # qualified names of the vLLM classes whose code runs
        def build(self, seed: int) -> torch.nn.Module   # create_weights, load(seed), post-load
        def reload(self, model: torch.nn.Module, seed: int) -> None  # vLLM's layerwise reload
    def cases() -> list[VllmCase]     # build() raises NotRunnable(reason) where CPU cannot run it

Every case is a model of ``LAYERS`` layers. Each layer's ``quant_method`` is a
``QuantizeMethodBase`` whose ``create_weights`` registers checkpoint parameters with
``weight_loader``s and whose ``process_weights_after_loading`` calls vLLM's real builders (quant
configs, experts constructors, ``make_fp8_moe_kernel``, experts' own post-load steps), the
recipe of ``shared/reference/vllm-0.33-on-cpu.md`` §1-2. ``build`` records vLLM's reload
metadata, loads a seeded checkpoint and runs the post-load step; ``reload`` is
``initialize_layerwise_reload`` -> ``load_weights`` -> ``finalize_layerwise_reload``.

vLLM's real quant methods (``Fp8LinearMethod``, ...) need a vLLM config, a GPU platform and
compiled ``_C`` ops for their post-load step: their cases try it and raise
:class:`NotRunnable` with what vLLM raised (:mod:`vllm_integration.blockers`). TRTLLM
experts need ``torch.accelerator.current_device_index`` to answer on CPU; their cases patch it
for the duration of the build/reload only. A case may also bring a real vLLM layer
(``layer``), answer other platform questions (``patch``) and run the forward-path call that
fills a lazy cache after each load (``first_forward``; with ``once``, only after the first load,
for objects vLLM builds once before graph capture); any failure of vLLM's code becomes
:class:`NotRunnable` with its :class:`~vllm_integration.blockers.Blocker`.

Importing this module imports vLLM (it is in ``vllm_integration``, never imported by
``derivgraph`` at load time).
"""

from __future__ import annotations

import torch
from torch import nn

from vllm_integration.blockers import attempt
from vllm_integration.case_base import (
    LAYERS,
    E,
    H,
    N,
    NotRunnable,
    PostLoad,
    VllmCase,
    nvfp4_qc,
)
from vllm_integration.case_base import (
    NVFP4 as _NVFP4,
)
from vllm_integration.case_base import (
    experts as _experts,
)
from vllm_integration.case_base import (
    load_class as _import,
)
from vllm_integration.case_base import (
    moe_config as _moe_config,
)
from vllm_integration.case_base import (
    vllm_runtime as _vllm_runtime,
)

__all__ = ["LAYERS", "NotRunnable", "VllmCase", "cases"]


# ---- post-load steps calling vLLM's own builders -------------------------------------------------

_FP8_SCALES = {"w13_weight_scale": ((E,), torch.float32), "w2_weight_scale": ((E,), torch.float32),
               "w13_input_scale": ((), torch.float32), "w2_input_scale": ((), torch.float32)}


def _fp8_qc(layer: nn.Module):  # noqa: ANN202 - vLLM's FusedMoEQuantConfig
    from vllm.model_executor.layers.fused_moe.config import fp8_w8a8_moe_quant_config

    return fp8_w8a8_moe_quant_config(w1_scale=layer.w13_weight_scale,
                                     w2_scale=layer.w2_weight_scale,
                                     a1_scale=layer.w13_input_scale,
                                     a2_scale=layer.w2_input_scale)


def _fp8_kernel(experts: str, backend: str) -> PostLoad:
    def post_load(method: nn.Module, layer: nn.Module) -> None:
        from vllm.model_executor.layers.fused_moe.oracle import fp8 as oracle_fp8

        qc = _fp8_qc(layer)
        method.moe_quant_config = qc
        method.moe_kernel = oracle_fp8.make_fp8_moe_kernel(
            qc, _moe_config(), _import(experts), getattr(oracle_fp8.Fp8MoeBackend, backend))

    return post_load



def _fp8_layer_qc(layer: nn.Module):  # noqa: ANN202
    """make_fp8_moe_quant_config(FLASHINFER_CUTLASS, layer=): registers layer.g1_alphas."""
    from vllm.model_executor.layers.fused_moe.oracle.fp8 import (
        Fp8MoeBackend,
        make_fp8_moe_quant_config,
    )

    return make_fp8_moe_quant_config(Fp8MoeBackend.FLASHINFER_CUTLASS, layer.w13_weight_scale,
                                     layer.w2_weight_scale, layer.w13_input_scale,
                                     layer.w2_input_scale, layer=layer)


def _int8_channel_qc(layer: nn.Module):  # noqa: ANN202 - vLLM's FusedMoEQuantConfig
    """int8 W8A8, per-channel weight scales, per-token activations, biased experts."""
    from vllm.model_executor.layers.fused_moe.config import int8_w8a8_moe_quant_config

    return int8_w8a8_moe_quant_config(w1_scale=layer.w13_weight_scale,
                                      w2_scale=layer.w2_weight_scale, a1_scale=None,
                                      a2_scale=None, w1_bias=layer.w13_bias,
                                      w2_bias=layer.w2_bias, per_act_token_quant=True)


_INT8 = {"w13_weight": ((E, 2 * N, H), torch.int8), "w2_weight": ((E, H, N), torch.int8),
         "w13_weight_scale": ((E, 2 * N, 1), torch.float32),
         "w2_weight_scale": ((E, H, 1), torch.float32),
         "w13_bias": ((E, 2 * N), torch.bfloat16), "w2_bias": ((E, H), torch.bfloat16)}


_nvfp4_qc = nvfp4_qc("FLASHINFER_CUTLASS")



def _fp8_linear() -> object:
    """vLLM's real Fp8LinearMethod, built and run through its post-load step on one layer."""
    from vllm.model_executor.layers.quantization.fp8 import Fp8Config, Fp8LinearMethod

    with _vllm_runtime():
        method = Fp8LinearMethod(Fp8Config(is_checkpoint_fp8_serialized=True,
                                           activation_scheme="static"))
        layer = nn.Module()
        method.create_weights(layer, input_size_per_partition=H, output_partition_sizes=[N],
                              input_size=H, output_size=N, params_dtype=torch.bfloat16,
                              weight_loader=lambda p, w: p.data.copy_(w))
        method.process_weights_after_loading(layer)
    return method


_EX = "vllm.model_executor.layers.fused_moe.experts"
_FP8 = {"w13_weight": ((E, 2 * N, H), torch.float8_e4m3fn),
        "w2_weight": ((E, H, N), torch.float8_e4m3fn), **_FP8_SCALES}


def cases() -> list[VllmCase]:
    """Every quant-method case, runnable or not (``build`` raises :class:`NotRunnable`); the
    trace engine drafts specs for them. ``derivgraph audit vllm`` also runs those of
    :mod:`vllm_integration.class_cases` (:func:`vllm_integration.executable_audit.audit_cases`)."""
    return [
        VllmCase("fp8-moe-cutlass", (f"{_EX}.cutlass_moe.CutlassExpertsFp8",), _FP8,
                 _fp8_kernel(f"{_EX}.cutlass_moe.CutlassExpertsFp8", "VLLM_CUTLASS")),
        VllmCase("fp8-moe-trtllm", (f"{_EX}.trtllm_fp8_moe.TrtLlmFp8ExpertsMonolithic",), _FP8,
                 _fp8_kernel(f"{_EX}.trtllm_fp8_moe.TrtLlmFp8ExpertsMonolithic",
                             "FLASHINFER_TRTLLM"), needs_cpu_accelerator=True),
        VllmCase("fp8-moe-flashinfer-cutlass",
                 (f"{_EX}.flashinfer_cutlass_moe.FlashInferExperts",), _FP8,
                 _experts(f"{_EX}.flashinfer_cutlass_moe.FlashInferExperts", _fp8_layer_qc)),
        VllmCase("fp8-moe-triton-or-cutlass", (f"{_EX}.triton_cutlass_moe.TritonOrCutlassExperts",
                                               f"{_EX}.cutlass_moe.CutlassExpertsFp8"), _FP8,
                 _experts(f"{_EX}.triton_cutlass_moe.TritonOrCutlassExperts", _fp8_qc)),
        VllmCase("nvfp4-moe-flashinfer-cutlass",
                 (f"{_EX}.flashinfer_cutlass_moe.FlashInferExperts",), _NVFP4,
                 _experts(f"{_EX}.flashinfer_cutlass_moe.FlashInferExperts", _nvfp4_qc,
                          experts_post_load=True)),
        VllmCase("int8-moe-zen-cpu", (f"{_EX}.cpu_moe.ZenCPUExpertsInt8",), _INT8,
                 _experts(f"{_EX}.cpu_moe.ZenCPUExpertsInt8", _int8_channel_qc)),
        VllmCase("fp8-linear", ("vllm.model_executor.layers.quantization.fp8.Fp8LinearMethod",),
                 not_runnable=attempt("Fp8LinearMethod", _fp8_linear)),
    ]
