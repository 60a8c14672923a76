"""Items 3, 4, 5, 8, 9, 12, 13: quant configs / experts built inside a quant-method PWAL.

A toy MoE layer registers the checkpoint params; its PWAL rebuilds the quant config
with vLLM's own make_*_moe_quant_config and (where it runs on CPU) the real experts
class, exactly as the real quant methods do in process_weights_after_loading. Then
vLLM 0.33.0 layerwise reload and kernel-format reload (get_parameter_for_reload +
copy_) are run, and we check what the experts / quant config would read."""
import torch
from torch import nn

from toy import ToyModel, first_load, kernel_format_reload, layerwise_reload, param
from vllm.model_executor.layers.fused_moe.config import (
    FusedMoEConfig,
    FusedMoEParallelConfig,
    RoutingMethodType,
)
from vllm.model_executor.layers.fused_moe.activation import MoEActivation

E, H, I = 4, 64, 32
MOE = FusedMoEConfig(
    num_experts=E, experts_per_token=2, hidden_dim=H, intermediate_size=I,
    num_local_experts=E, num_logical_experts=E, activation=MoEActivation.SILU,
    device="cpu", routing_method=RoutingMethodType.Renormalize,
    moe_parallel_config=FusedMoEParallelConfig.make_no_parallel(),
    in_dtype=torch.bfloat16,
)


class MoE(nn.Module):
    def __init__(self, shapes, pwal):
        super().__init__()
        for n, s in shapes.items():
            self.register_parameter(n, param(*s))
        from toy import ToyMethod
        self.quant_method = ToyMethod(lambda layer: None, pwal)


def run(title, shapes, pwal, reads, kf_names):
    """reads(qm) -> dict name -> (tensor read by the kernel, layer param name it should equal)."""
    torch.manual_seed(0)
    ck = [{f"layer.{n}": torch.rand(*s) + 0.5 for n, s in shapes.items()} for _ in range(3)]
    m = ToyModel(MoE(shapes, pwal))
    first_load(m, ck[0])
    qm, L = m.layer.quant_method, m.layer
    old = {k: (t, t.data_ptr(), t.clone()) for k, (t, _) in reads(qm).items()}
    print(f"== {title}")
    # A: kernel-format reload right after first load
    kernel_format_reload(m, {n: ck[1][n] for n in kf_names})
    for k, (t, p) in reads(qm).items():
        print(f"  A kernel-format after first load: {k} tracks layer.{p}:",
              torch.equal(t.float().reshape(-1), getattr(L, p).float().reshape(-1))
              if t.numel() == getattr(L, p).numel() else "(derived)",
              "| aliases kept param storage:",
              t.untyped_storage().data_ptr() == getattr(L, p).untyped_storage().data_ptr())
    # B: layerwise reload
    layerwise_reload(m, ck[2])
    for k, (t, p) in reads(qm).items():
        o_t, o_ptr, o_val = old[k]
        print(f"  B layerwise: {k} new object: {t is not o_t}; data_ptr moved: {t.data_ptr() != o_ptr};"
              f" old object still holds first-load value: {torch.equal(o_t, o_val)};"
              f" new aliases kept layer.{p} storage:",
              t.untyped_storage().data_ptr() == getattr(L, p).untyped_storage().data_ptr())
    # C: kernel-format reload after the layerwise one
    kf = {n: ck[1][n] * 3 for n in kf_names}
    kernel_format_reload(m, kf)
    for k, (t, p) in reads(qm).items():
        if t.numel() == getattr(L, p).numel():
            print(f"  C kernel-format after layerwise: {k} == layer.{p} (refilled):",
                  torch.equal(t.float().reshape(-1), getattr(L, p).float().reshape(-1)))
        else:
            print(f"  C kernel-format after layerwise: {k} (derived) unchanged -> stale")


# ---- items 3/4: ZenCPUExpertsInt8 (compressed_tensors_moe_w8a8_int8 PWAL) ----
def pwal_zen(qm, layer):
    from vllm.model_executor.layers.fused_moe.experts.cpu_moe import ZenCPUExpertsInt8
    from vllm.model_executor.layers.fused_moe.oracle.int8 import (
        Int8MoeBackend, make_int8_moe_quant_config)
    qm.moe_quant_config = make_int8_moe_quant_config(
        int8_backend=Int8MoeBackend.CPU, w1_scale=layer.w13_weight_scale,
        w2_scale=layer.w2_weight_scale, a1_scale=None, a2_scale=None,
        per_act_token_quant=True, layer=layer)
    qm.experts = ZenCPUExpertsInt8(MOE, qm.moe_quant_config)


run("items 3/4 ZenCPUExpertsInt8._w1/_w2_scale_f32 (cpu_moe.py:1660/1661)",
    {"w13_weight_scale": (E, 2 * I, 1), "w2_weight_scale": (E, H, 1)}, pwal_zen,
    lambda qm: {"_w1_scale_f32": (qm.experts._w1_scale_f32, "w13_weight_scale"),
                "_w2_scale_f32": (qm.experts._w2_scale_f32, "w2_weight_scale")},
    ["layer.w13_weight_scale", "layer.w2_weight_scale"])


# ---- item 5: Nvfp4QuantizationEmulationTritonExperts.w2_scale_val ----
def pwal_nvfp4(backend_name):
    def pwal(qm, layer):
        from vllm.model_executor.layers.fused_moe.oracle.nvfp4 import (
            NvFp4MoeBackend, make_nvfp4_moe_quant_config)
        backend = getattr(NvFp4MoeBackend, backend_name)
        a13 = 1.0 / layer.w13_input_global_scale.max() if backend_name == "EMULATION" \
            else 1.0 / layer.w13_input_global_scale
        a2 = 1.0 / layer.w2_input_global_scale.max() if backend_name == "EMULATION" \
            else 1.0 / layer.w2_input_global_scale
        layer.w13_input_scale = a13   # CT W4A4 NVFP4 PWAL: plain attribute
        layer.w2_input_scale = a2
        qm.moe_quant_config = make_nvfp4_moe_quant_config(
            backend=backend, w13_scale=layer.w13_weight_scale,
            w2_scale=layer.w2_weight_scale, w13_scale_2=layer.w13_weight_scale_2,
            w2_scale_2=layer.w2_weight_scale_2, a13_scale=a13, a2_scale=a2, layer=layer)
        if backend_name == "EMULATION":
            from vllm.model_executor.layers.fused_moe.experts.nvfp4_emulation_moe import (
                Nvfp4QuantizationEmulationTritonExperts)
            qm.experts = Nvfp4QuantizationEmulationTritonExperts(MOE, qm.moe_quant_config)
    return pwal


NV = {"w13_weight_scale": (E, 2 * I, H // 16), "w2_weight_scale": (E, H, I // 16),
      "w13_weight_scale_2": (E,), "w2_weight_scale_2": (E,),
      "w13_input_global_scale": (E,), "w2_input_global_scale": (E,)}
try:
    run("item 5 Nvfp4QuantizationEmulationTritonExperts.w2_scale_val (nvfp4_emulation_moe.py:530)",
        NV, pwal_nvfp4("EMULATION"),
        lambda qm: {"w2_scale_val": (qm.experts.w2_scale_val, "w2_weight_scale")},
        ["layer.w2_weight_scale"])
except Exception as exc:
    print("item 5 experts construction failed on CPU:", type(exc).__name__, exc)

run("item 8 CT W4A4 NVFP4 moe_quant_config, FLASHINFER_CUTLASS (flashinfer_cutlass_moe.py:306/310)",
    NV, pwal_nvfp4("FLASHINFER_CUTLASS"),
    lambda qm: {"qc.w2_scale": (qm.moe_quant_config.w2_scale, "w2_weight_scale"),
                "qc.a1_gscale": (qm.moe_quant_config.a1_gscale, "w13_input_global_scale")},
    ["layer.w2_weight_scale", "layer.w13_input_global_scale"])


# ---- item 9: CT W8A8 MXFP8 moe_quant_config (block [1, 32]) ----
def pwal_fp8(backend_name, block_shape, per_tensor):
    def pwal(qm, layer):
        from vllm.model_executor.layers.fused_moe.oracle.fp8 import (
            Fp8MoeBackend, make_fp8_moe_quant_config)
        qm.moe_quant_config = make_fp8_moe_quant_config(
            fp8_backend=getattr(Fp8MoeBackend, backend_name),
            w1_scale=layer.w13_weight_scale, w2_scale=layer.w2_weight_scale,
            a1_scale=layer.w13_input_scale if per_tensor else None,
            a2_scale=layer.w2_input_scale if per_tensor else None,
            block_shape=block_shape, layer=layer)
    return pwal


run("item 9 CT MXFP8 moe_quant_config, FLASHINFER_TRTLLM block [1,32] (trtllm_fp8_moe.py:495)",
    {"w13_weight_scale": (E, 2 * I, H // 32), "w2_weight_scale": (E, H, I // 32)},
    pwal_fp8("FLASHINFER_TRTLLM", [1, 32], False),
    lambda qm: {"qc.w1_scale": (qm.moe_quant_config.w1_scale, "w13_weight_scale")},
    ["layer.w13_weight_scale"])

PT = {"w13_weight_scale": (E,), "w2_weight_scale": (E,),
      "w13_input_scale": (1,), "w2_input_scale": (1,)}
run("items 12/13 FP8 per-tensor moe_quant_config, TRITON (triton_moe.py:442)",
    PT, pwal_fp8("TRITON", None, True),
    lambda qm: {"qc.w1_scale": (qm.moe_quant_config.w1_scale, "w13_weight_scale")},
    ["layer.w13_weight_scale"])
run("items 12/13 FP8 per-tensor moe_quant_config, FLASHINFER_CUTLASS (flashinfer_cutlass_moe.py:290)",
    PT, pwal_fp8("FLASHINFER_CUTLASS", None, True),
    lambda qm: {"qc.a2_gscale": (qm.moe_quant_config.a2_gscale, "w2_input_scale"),
                "qc.g1_alphas": (qm.moe_quant_config.g1_alphas, "g1_alphas")},
    ["layer.w2_input_scale"])
