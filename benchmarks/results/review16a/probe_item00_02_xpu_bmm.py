"""Items 0/1/2: wo_a.bmm_scale / bmm_weight plain layer attributes built in the XPU
linear-kernel PWAL. Real XPUMxFp8LinearKernel.process_weights_after_loading (items 0/1)
and real XPUFp8BlockScaledMMKernel._prepare_bmm_params (item 2) on a toy layer;
vLLM 0.33.0 layerwise + kernel-format reload on CPU."""
import torch
from torch import nn

from toy import ToyMethod, ToyModel, first_load, kernel_format_reload, layerwise_reload, param
from vllm.model_executor.kernels.linear.mxfp8.xpu import XPUMxFp8LinearKernel
from vllm.model_executor.kernels.linear.scaled_mm.xpu import XPUFp8BlockScaledMMKernel
from vllm.model_executor.utils import replace_parameter

G, N, K = 2, 64, 64
mx = XPUMxFp8LinearKernel.__new__(XPUMxFp8LinearKernel)
bs = XPUFp8BlockScaledMMKernel.__new__(XPUFp8BlockScaledMMKernel)


def pwal_mx(qm, layer):
    mx.process_weights_after_loading(layer)


def pwal_bs(qm, layer):  # tail of XPUFp8BlockScaledMMKernel.process_weights_after_loading
    scale_kn = layer.weight_scale_inv.data.t().contiguous()
    replace_parameter(layer, "weight_scale_inv", scale_kn.t())
    bs._prepare_bmm_params(layer, scale_kn)


class WoA(nn.Module):
    def __init__(self, shapes, pwal):
        super().__init__()
        for n, (s, dt) in shapes.items():
            self.register_parameter(n, param(*s, dtype=dt))
        self.is_bmm, self.bmm_batch_size = True, G
        self.quant_method = ToyMethod(lambda layer: None, pwal)


def bump(x):
    """A different value of the kernel-format tensor, same dtype and layout."""
    if x.dtype == torch.float8_e8m0fnu:
        return (x.clone().view(torch.uint8) + 1).view(x.dtype)
    return x.clone() * 2


def run(title, shapes, pwal, scale_name):
    torch.manual_seed(0)
    cks = [{f"layer.{n}": (torch.randint(1, 120, s, dtype=torch.uint8) if dt == torch.uint8
                           else torch.rand(*s) + 0.1) for n, (s, dt) in shapes.items()}
           for _ in range(3)]
    m = ToyModel(WoA(shapes, pwal))
    first_load(m, cks[0])
    L = m.layer
    o_s, o_w = L.bmm_scale, L.bmm_weight
    v_s, v_w = o_s.clone(), o_w.clone()
    print("==", title)
    layerwise_reload(m, cks[1])
    print("  layerwise: bmm_scale moved:", L.bmm_scale.data_ptr() != o_s.data_ptr(),
          "| old bmm_scale object (captured XPU graph) still first-load value:", torch.equal(o_s, v_s),
          "| new bmm_scale != old:", not torch.equal(L.bmm_scale.float(), v_s.float()))
    print("  layerwise: bmm_weight moved:", L.bmm_weight.data_ptr() != o_w.data_ptr(),
          "| old bmm_weight still first-load value:", torch.equal(o_w.float(), v_w.float()),
          "| bmm_weight shares layer.weight storage:",
          L.bmm_weight.untyped_storage().data_ptr() == L.weight.untyped_storage().data_ptr())
    s_before, w_before = L.bmm_scale.clone(), L.bmm_weight.clone()
    kernel_format_reload(m, {"layer.weight": cks[2]["layer.weight"],
                             f"layer.{scale_name}": bump(getattr(L, scale_name).data)})
    print("  kernel-format (weight, scale refilled): bmm_scale unchanged (stale):",
          torch.equal(L.bmm_scale.float(), s_before.float()),
          "| bmm_weight unchanged (stale):", torch.equal(L.bmm_weight.float(), w_before.float()))


run("items 0/1 mxfp8/xpu.py:53/60", {"weight": ((N, K), torch.float32),
                                     "weight_scale": ((N, K // 32), torch.uint8)}, pwal_mx,
    "weight_scale")
run("item 2 scaled_mm/xpu.py:256", {"weight": ((N, K), torch.float32),
                                    "weight_scale_inv": ((N // 32, K // 32), torch.float32)},
    pwal_bs, "weight_scale_inv")
