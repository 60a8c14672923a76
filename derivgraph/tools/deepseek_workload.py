"""A DeepSeek-scale synthetic workload for ``derivgraph bench --workload deepseek``.

61 MoE layers x 8 derived [256] constants (fp32 scale products and reciprocals, int64 strides)
plus 8 fused bf16 K/V stacks of [8192, 4096] gathered from drafter layers. ``scale`` shrinks the
K/V stacks (rows and columns) so the workload fits a CPU run.
"""

from __future__ import annotations

import torch
from torch import nn

from derivgraph import DerivedTensor, Spec, Target

__all__ = ["DeepseekModel", "deepseek_specs"]


class DsMoE(nn.Module):
    def __init__(self, experts: int, device: str):
        super().__init__()
        for name in ("w13_weight_scale", "w2_weight_scale", "w13_input_scale", "w2_input_scale"):
            self.register_parameter(name, nn.Parameter(
                0.5 + torch.rand(experts, device=device), requires_grad=False))
        self.hidden, self.inter = 7168, 2048

    def post_load(self) -> None:
        """The engine's naive post-load: new tensors every time."""
        e = self.w13_weight_scale.shape[0]
        dev = self.w13_weight_scale.device
        self.g1 = self.w13_weight_scale * self.w13_input_scale
        self.g2 = self.w2_weight_scale * self.w2_input_scale
        self.a1 = 1.0 / self.w13_input_scale
        self.a2 = 1.0 / self.w2_input_scale
        self.ab_strides1 = torch.full((e,), self.hidden, dtype=torch.int64, device=dev)
        self.ab_strides2 = torch.full((e,), self.inter, dtype=torch.int64, device=dev)
        self.c_strides1 = torch.full((e,), 2 * self.inter, dtype=torch.int64, device=dev)
        self.c_strides2 = torch.full((e,), self.hidden, dtype=torch.int64, device=dev)


class DsDrafter(nn.Module):
    def __init__(self, layers: int, rows: int, cols: int, device: str):
        super().__init__()
        self.q = rows // 2
        self.layers = nn.ModuleList(nn.Linear(cols, rows // 2 + rows // layers, bias=False,
                                              device=device, dtype=torch.bfloat16)
                                    for _ in range(layers))
        self.requires_grad_(False)

    def post_load(self) -> None:
        self.kv = torch.cat([layer.weight[self.q:] for layer in self.layers], 0)


class DeepseekModel(nn.Module):
    def __init__(self, device: str = "cpu", scale: float = 1.0, layers: int = 61,
                 experts: int = 256):
        super().__init__()
        rows, cols = max(8, int(8192 * scale)), max(8, int(4096 * scale))
        self.layers = nn.ModuleList(DsMoE(experts, device) for _ in range(layers))
        self.drafters = nn.ModuleList(DsDrafter(8, rows, cols, device) for _ in range(8))

    def post_load(self) -> None:
        for m in self.modules():
            if isinstance(m, (DsMoE, DsDrafter)):
                m.post_load()

    def reload(self, seed: int) -> None:
        """The engine's loader: new values, written in place (generated on the device)."""
        with torch.no_grad():
            for i, p in enumerate(self.parameters()):
                gen = torch.Generator(device=p.device).manual_seed(seed * 100003 + i)
                p.uniform_(0.5, 1.5, generator=gen)


def deepseek_specs() -> list[Spec]:
    def d(name: str, formula: str, **kw) -> DerivedTensor:
        return DerivedTensor(name=name, kind="attribute", formula=formula, **kw)

    moe = Spec(name="ds-moe", target=Target(module_class=["DsMoE"]),
               params={"E": "w13_weight_scale.shape[0]", "H": "hidden", "N": "inter"},
               derived=[d("g1", "w13_weight_scale * w13_input_scale"),
                        d("g2", "w2_weight_scale * w2_input_scale"),
                        d("a1", "1.0 / w13_input_scale"), d("a2", "1.0 / w2_input_scale"),
                        d("ab_strides1", "full([E], H, dtype=int64)"),
                        d("ab_strides2", "full([E], N, dtype=int64)"),
                        d("c_strides1", "full([E], 2 * N, dtype=int64)"),
                        d("c_strides2", "full([E], H, dtype=int64)")])
    kv = Spec(name="ds-kv", target=Target(module_class=["DsDrafter"]), params={"q": "q"},
              derived=[d("kv", "cat([w[q:] for w in each('layers.*.weight')], 0)")])
    return [moe, kv]
