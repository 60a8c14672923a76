"""Positions 14, 18, 20: a moe_quant_config built inside quant-method PWAL from layer params.

Pattern of each site, with vLLM's real config builders and real ``replace_parameter``:
- 14 moe_wna16.py:415: ``replace_parameter(layer, "w13_scales", ...)`` then
  ``make_wna16_moe_quant_config(w1_scale=layer.w13_scales, ...)``;
- 18 online/mxfp8.py:198: online quantization registers ``w13_weight_scale`` via
  ``replace_parameter`` in PWAL, then ``make_fp8_moe_quant_config(FLASHINFER_TRTLLM,
  block_shape=[1, 32], w1_scale=layer.w13_weight_scale)``;
- 20 quark_moe.py:2385: ``replace_parameter(layer, "w2_weight_scale", ...)`` then
  ``make_nvfp4_moe_quant_config(FLASHINFER_CUTLASS, w2_scale=layer.w2_weight_scale)``.

Question: after a layerwise reload, does the rebuilt config (what eager reads) alias the kept
parameter, and does a kernel-format reload after it leave the config's value stale?
"""

from __future__ import annotations

import torch

from probe_lib import PatternLayer, ToyModel, initial_load, kernel_format_reload, layerwise_reload, make_param
from vllm.model_executor.layers.fused_moe.oracle.fp8 import Fp8MoeBackend, make_fp8_moe_quant_config
from vllm.model_executor.layers.fused_moe.oracle.int_wna16 import make_wna16_moe_quant_config
from vllm.model_executor.layers.fused_moe.oracle.nvfp4 import NvFp4MoeBackend, make_nvfp4_moe_quant_config
from vllm.model_executor.utils import replace_parameter

E, N, K, G = 2, 8, 16, 4
holder: dict[str, object] = {}


def case_wna16():
    def create(layer):
        make_param(layer, "w13_scales", (E, N, K // G))
        make_param(layer, "w2_scales", (E, K, N // G))

    def pwal(layer):
        # stand-in for the backend's scale permutation (a new tensor, different layout)
        replace_parameter(layer, "w13_scales", layer.w13_scales.data.transpose(1, 2).contiguous() * 2)
        replace_parameter(layer, "w2_scales", layer.w2_scales.data * 2)
        holder["qc"] = make_wna16_moe_quant_config(
            w1_scale=layer.w13_scales, w2_scale=layer.w2_scales, group_size=G, num_bits=4
        )

    return create, pwal, "w13_scales", lambda qc: qc.w1_scale, {
        "w13_scales": lambda s: (E, N, K // G),
        "w2_scales": lambda s: (E, K, N // G),
    }


def case_mxfp8_online():
    def create(layer):
        make_param(layer, "w13_weight", (E, N, K), torch.bfloat16)

    def pwal(layer):
        w = layer.w13_weight.data.float()
        scale = w.abs().amax(dim=-1, keepdim=True)  # stand-in for mxfp8_e4m3_quantize's scales
        replace_parameter(layer, "w13_weight", (w / scale).to(torch.float8_e4m3fn))
        replace_parameter(layer, "w13_weight_scale", scale)
        layer.w13_input_scale = None
        holder["qc"] = make_fp8_moe_quant_config(
            fp8_backend=Fp8MoeBackend.FLASHINFER_TRTLLM,
            w1_scale=layer.w13_weight_scale,
            w2_scale=layer.w13_weight_scale,
            a1_scale=None,
            a2_scale=None,
            block_shape=[1, 32],
            layer=layer,
        )

    return create, pwal, "w13_weight_scale", lambda qc: qc.w1_scale, {"w13_weight": None}


def case_nvfp4_quark():
    def create(layer):
        for n in ("w13_weight_scale", "w2_weight_scale"):
            make_param(layer, n, (E, N, K // 16 + 1))
        for n in ("w13_weight_scale_2", "w2_weight_scale_2", "w13_input_scale_2", "w2_input_scale_2"):
            make_param(layer, n, (E,))

    def pwal(layer):
        replace_parameter(layer, "w2_weight_scale", layer.w2_weight_scale.data * 2)  # "swizzle"
        holder["qc"] = make_nvfp4_moe_quant_config(
            backend=NvFp4MoeBackend.FLASHINFER_CUTLASS,
            w13_scale=layer.w13_weight_scale,
            w2_scale=layer.w2_weight_scale,
            w13_scale_2=layer.w13_weight_scale_2,
            w2_scale_2=layer.w2_weight_scale_2,
            a13_scale=layer.w13_input_scale_2,
            a2_scale=layer.w2_input_scale_2,
            layer=layer,
        )

    return create, pwal, "w2_weight_scale", lambda qc: qc.w2_scale, None


def run(label, case):
    create, pwal, pname, read, _ = case()
    layer = PatternLayer(create, pwal)
    model = ToyModel(moe=layer)

    def ckpt(seed):
        g = torch.Generator().manual_seed(seed)
        out = {}
        for n, p in PatternLayer(create, lambda l: None).named_parameters():
            out["moe." + n] = (torch.rand(p.shape, generator=g) + 0.5).to(p.dtype)
        return out

    initial_load(model, ckpt(0))
    kept = getattr(layer, pname)
    qc0 = holder["qc"]
    print(f"[{label}] initial: config reads kept param: {read(qc0) is kept}")

    layerwise_reload(model, ckpt(1))
    qc1 = holder["qc"]
    kept_after = getattr(layer, pname)
    print(f"[{label}] layerwise: kept object unchanged: {kept_after is kept}; "
          f"rebuilt config reads kept param: {read(qc1) is kept}; "
          f"values equal kept: {torch.equal(read(qc1).float(), kept.float())}; "
          f"old (captured) config reads kept: {read(qc0) is kept}")

    new_val = kept.detach().clone() * 3 + 1
    kernel_format_reload(model, {"moe." + pname: new_val})
    print(f"[{label}] kernel-format after layerwise: kept refilled: {torch.equal(kept.float(), new_val.float())}; "
          f"rebuilt config (eager) value stale: {not torch.equal(read(qc1).float(), kept.float())}")


if __name__ == "__main__":
    run("pos14 moe_wna16", case_wna16)
    run("pos18 online mxfp8", case_mxfp8_online)
    run("pos20 quark nvfp4", case_nvfp4_quark)
