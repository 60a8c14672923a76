"""Probe: toy MoE layer whose quant-method PWAL builds holders of the same
patterns as draw positions 0-13 (outside11, judge A), run through vLLM 0.33.0's
own reload functions on CPU.

Flow: initial load + PWAL -> record "captured" data_ptrs (what a graph would
have baked) -> layerwise reload (initialize_layerwise_reload / load_weights /
finalize_layerwise_reload) with new checkpoint values -> kernel-format reload
(vLLM's get_parameter_for_reload(...).copy_) with a third set of values.
After each step print, per holder: is its data_ptr the captured one, does the
eager-read holder hold the right value, does the captured storage hold it, and
is the captured storage a kept parameter's (else nothing in the model holds it
any more: in a real run it is freed, the probe keeps it alive only to look).
"""

import torch
from torch import nn
from vllm.model_executor.layers.fused_moe.config import FusedMoEQuantConfig
from vllm.model_executor.layers.quantization.base_config import QuantizeMethodBase
from vllm.model_executor.layers.quantization.compressed_tensors.schemes.compressed_tensors_wNa8o8 import (  # noqa: E501
    CompressedTensorsWNA8O8Int,
)
from vllm.model_executor.model_loader.reload import (
    finalize_layerwise_reload,
    initialize_layerwise_reload,
    record_metadata_for_reloading,
)
from vllm.model_executor.model_loader.reload.inplace import get_parameter_for_reload
from vllm.model_executor.model_loader.weight_utils import default_weight_loader
from vllm.model_executor.utils import set_weight_attrs

E, N, H, M, KSF = 2, 4, 3, 8, 2


def mma_view(sf: torch.Tensor) -> torch.Tensor:
    """Same shape op as flashinfer convert_sf_to_mma_layout: view + permute."""
    return sf.reshape(E * M, KSF).view(E, 1, 1, M, KSF, 1).permute(3, 4, 1, 5, 2, 0)


class ToyMethod(QuantizeMethodBase):
    """PWAL mirrors the stores of the sampled sites (see probe README)."""

    def __init__(self) -> None:
        self.scheme_input_scale = None  # wNa8o8: scheme attr, persists
        self.router_weight_ones = None  # inc_wna16: lazy cache

    def create_weights(self, layer, *a, **k):  # pragma: no cover - unused
        raise NotImplementedError

    def apply(self, layer, *a, **k):  # pragma: no cover - unused
        raise NotImplementedError

    def process_weights_after_loading(self, layer: nn.Module) -> None:
        # b12x PWAL: .data rebind of the block scale, scale_2 filled with 1.
        layer.w13_blockscale.data = (
            layer.w13_blockscale.float() * layer.w13_scale_2.view(-1, 1, 1)
        ).to(layer.w13_blockscale.dtype)
        layer.w13_scale_2.data.fill_(1.0)
        # quant config built inside PWAL (containers at auto_awq:705, ct int8:222,
        # fp8:702, inc_mxfp4:214, modelopt:615) with a fresh 1/a2 gscale
        # (nvfp4 oracle / FI-CUTLASS fp8 oracle).
        qc = FusedMoEQuantConfig.make(
            None,
            w1_scale=layer.w13_weight_scale,
            w2_scale=layer.w2_weight_scale,
            w1_bias=layer.w13_bias,
            w2_bias=layer.w2_bias,
            a2_gscale=1.0 / layer.w2_input_scale,
        )
        qc._w2.bias = layer.w2_bias  # fp8.py:797
        self.moe_quant_config = qc
        h = {}
        # ZenCPUExpertsInt8.__init__ (cpu_moe.py:1531, 1537)
        h["zen_w2_scale_f32"] = (
            qc.w2_scale.detach().to(torch.float32).reshape(E, -1).contiguous()
        )
        h["zen_w1_bias_bf16"] = qc.w1_bias.detach().to(torch.bfloat16).contiguous()
        # Nvfp4 emulation experts (nvfp4_emulation_moe.py:356)
        h["emul_w1_scale_val"] = qc.w1_scale
        # QC references read by Triton / Marlin (container positions) and fp8.py:797
        h["qc_w1_scale"] = qc.w1_scale
        h["qc_w2_bias"] = qc.w2_bias
        # b12x experts PWAL (flashinfer_b12x_moe.py:125, 143)
        qc.a2_gscale.fill_(1.0)
        h["b12x_fc2_input_scale"] = qc.a2_gscale
        h["b12x_w1_sf_mma"] = mma_view(layer.w13_blockscale)
        self.holders = h
        # wNa8o8 (compressed_tensors_wNa8o8.py:198): vLLM's own _take_act_scale
        self.scheme_input_scale = CompressedTensorsWNA8O8Int._take_act_scale(
            layer, "input_scale"
        )
        self.holders["wna8o8_input_scale"] = self.scheme_input_scale
        # inc_wna16_moe.py: PWAL drops the lazy cache
        self.router_weight_ones = None

    def get_router_weight_ones(self, rows: int) -> torch.Tensor:
        if self.router_weight_ones is None or self.router_weight_ones.shape[0] < rows:
            self.router_weight_ones = torch.ones(rows, 1)
        return self.router_weight_ones[:rows]


class ToyMoE(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        shapes = {
            "w13_weight_scale": ((E, N, 1), torch.float32),
            "w2_weight_scale": ((E, H, 1), torch.float32),
            "w13_bias": ((E, N), torch.bfloat16),
            "w2_bias": ((E, H), torch.bfloat16),
            "w2_input_scale": ((E,), torch.float32),
            "input_scale": ((1,), torch.float32),
            "w13_blockscale": ((E, M, KSF), torch.float32),
            "w13_scale_2": ((E,), torch.float32),
        }
        for name, (shape, dtype) in shapes.items():
            p = nn.Parameter(torch.empty(shape, dtype=dtype), requires_grad=False)
            set_weight_attrs(p, {"weight_loader": default_weight_loader})
            self.register_parameter(name, p)
        self.quant_method = ToyMethod()


class ToyModel(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.experts = ToyMoE()

    def load_weights(self, weights):
        for name, w in weights:
            p = getattr(self.experts, name.split(".", 1)[1])
            p.weight_loader(p, w)


def checkpoint(seed: int) -> dict[str, torch.Tensor]:
    g = torch.Generator().manual_seed(seed)
    m = ToyMoE()
    out = {}
    for name, p in m.named_parameters():
        out["experts." + name] = (torch.rand(p.shape, generator=g) + 0.5).to(p.dtype)
    return out


def expected(ck: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    c = {k.split(".", 1)[1]: v for k, v in ck.items()}
    blk = c["w13_blockscale"].float() * c["w13_scale_2"].view(-1, 1, 1)
    return {
        "zen_w2_scale_f32": c["w2_weight_scale"].reshape(E, -1),
        "zen_w1_bias_bf16": c["w13_bias"],
        "emul_w1_scale_val": c["w13_weight_scale"],
        "qc_w1_scale": c["w13_weight_scale"],
        "qc_w2_bias": c["w2_bias"],
        "b12x_fc2_input_scale": torch.ones(E),
        "b12x_w1_sf_mma": mma_view(blk),
        "wna8o8_input_scale": c["input_scale"],
    }


def report(stage, model, captured, ck):
    qm = model.experts.quant_method
    exp = expected(ck)
    print(f"== {stage}")
    for name, t in qm.holders.items():
        ptr_same = t.data_ptr() == captured[name][0]
        ok = torch.equal(t.float(), exp[name].float())
        cap = captured[name][1]  # the tensor a graph captured at startup
        cap_ok = torch.equal(cap.float(), exp[name].float())
        kept = {p.untyped_storage().data_ptr() for p in model.parameters()}
        cap_kept = cap.untyped_storage().data_ptr() in kept
        print(
            f"  {name:22s} same_ptr={ptr_same!s:5s} eager_value_ok={ok!s:5s} "
            f"captured_storage_value_ok={cap_ok!s:5s} "
            f"captured_storage_is_a_kept_param={cap_kept}"
        )


def main() -> None:
    torch.manual_seed(0)
    model = ToyModel()
    record_metadata_for_reloading(model)
    ck_a = checkpoint(1)
    model.load_weights(ck_a.items())
    model.experts.quant_method.process_weights_after_loading(model.experts)
    qm = model.experts.quant_method
    ones0 = qm.get_router_weight_ones(4)
    captured = {k: (v.data_ptr(), v) for k, v in qm.holders.items()}
    report("initial load", model, captured, ck_a)

    # layerwise reload with checkpoint B
    ck_b = checkpoint(2)
    initialize_layerwise_reload(model)
    model.load_weights(ck_b.items())
    finalize_layerwise_reload(model, None)
    report("after layerwise reload (B)", model, captured, ck_b)
    print(
        "  router_weight_ones: cache after reload is None:",
        qm.router_weight_ones is None,
        "| next call allocates new storage:",
        qm.get_router_weight_ones(4).data_ptr() != ones0.data_ptr(),
    )

    # kernel-format reload with checkpoint C (processed values sent for kept params)
    ck_c = checkpoint(3)
    proc = {}
    for k, v in ck_c.items():
        short = k.split(".", 1)[1]
        if short == "input_scale":
            continue  # deleted by _take_act_scale: not a parameter any more
        if short == "w13_blockscale":
            v = v.float() * ck_c["experts.w13_scale_2"].view(-1, 1, 1)
        if short == "w13_scale_2":
            v = torch.ones_like(v)
        proc[k] = v
    for name, w in proc.items():
        get_parameter_for_reload(model, name).copy_(w)
    try:
        get_parameter_for_reload(model, "experts.input_scale")
        print("  input_scale still a parameter")
    except AttributeError as e:
        print("  kernel-format reload of experts.input_scale raises:", type(e).__name__)
    ck_c_view = dict(ck_c)
    ck_c_view["experts.input_scale"] = ck_b["experts.input_scale"]
    report("after kernel-format reload (C) following the layerwise one", model,
           captured, ck_c_view)


if __name__ == "__main__":
    main()
