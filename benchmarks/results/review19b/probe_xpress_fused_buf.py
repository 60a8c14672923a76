"""Position 23: qwen3_xpress.py:217 ``self._fused_buf = {...}`` built in ``build_fused_buffers``.

Uses vLLM's real ``XPressRefinerHead`` (small sizes). The wrapper's ``load_weights`` does what
``Qwen3XPressForCausalLM.load_weights`` does after its loader: ``fold_from_raw_(raw mix.L)``
then ``build_fused_buffers()``. The drafter's layerwise reload (``start_draft_weight_update``
-> ``initialize_layerwise_reload(drafter)`` -> ``drafter.load_weights`` -> finalize) is driven
with vLLM's real functions.

Question: after the reload, is ``_fused_buf`` the same storage the captured draft step read,
and what do its entries hold?
"""

from __future__ import annotations

import torch
from torch import nn

from probe_lib import initial_load, layerwise_reload, ptr
from vllm.model_executor.models.qwen3_xpress import XPressRefinerHead
from vllm.model_executor.model_loader.weight_utils import default_weight_loader

B, R = 4, 8


class Drafter(nn.Module):
    def __init__(self):
        super().__init__()
        self.xpress_head = XPressRefinerHead(vocab_size=64, hidden_size=16, block_size=B, rank=R,
                                             mlp_hidden=16, max_num_reqs=2, topc=8)

    def load_weights(self, weights):
        params = dict(self.named_parameters())
        raw = None
        for name, w in weights:
            if name == "xpress_head.mix.L":
                raw = w
                continue
            p = params[name]
            getattr(p, "weight_loader", default_weight_loader)(p, w)
        head = self.xpress_head
        head.fold_from_raw_(raw.to(head.mix_L.dtype))
        head.build_fused_buffers()


def ckpt(model, seed):
    g = torch.Generator().manual_seed(seed)
    out = {n: torch.rand(p.shape, generator=g) for n, p in model.named_parameters() if not n.endswith("mix_L")}
    out["xpress_head.mix.L"] = torch.rand(R, B, B, generator=g)
    return out


if __name__ == "__main__":
    model = Drafter()
    c0 = ckpt(model, 0)
    c1 = ckpt(model, 1)
    initial_load(model, c0)
    head = model.xpress_head
    buf0 = head._fused_buf
    whc0 = ptr(buf0["whc_t"])
    print("initial: whc_t == in_proj.weight[:, :2r].t():",
          torch.equal(buf0["whc_t"], head.in_proj.weight[:, : 2 * R].t()))
    layerwise_reload(model, c1)
    buf1 = head._fused_buf
    print("layerwise: _fused_buf rebound:", buf1 is not buf0, "| whc_t storage moved:", ptr(buf1["whc_t"]) != whc0)
    print("layerwise: new whc_t matches reloaded in_proj:",
          torch.equal(buf1["whc_t"], c1["xpress_head.in_proj.weight"][:, : 2 * R].t()))
    print("layerwise: old (captured) whc_t still ckpt0:",
          torch.equal(buf0["whc_t"], c0["xpress_head.in_proj.weight"][:, : 2 * R].t()))
    print("layerwise: new mix_kjc device:", buf1["mix_kjc"].device,
          "| mix_L after reload equals fold of ckpt1:",
          torch.equal(head.mix_L, c1["xpress_head.mix.L"] * torch.tril(torch.ones(B, B)) + torch.eye(B)))
