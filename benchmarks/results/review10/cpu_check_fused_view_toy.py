"""CPU check for DeepSeek-V4 ROCm `_fused_compressor_weight` (rocm.py:1232): two registered
linear weights re-pointed with `set_` into one fused tensor in a model-level PWAL (which never
reruns). After vLLM's layerwise reload of the two linears, and after a kernel-format
`param.copy_`, does the fused tensor hold the new weights?"""
import torch
from torch import nn
from vllm.model_executor.model_loader.reload.layerwise import (
    finalize_layerwise_reload,
    initialize_layerwise_reload,
    record_metadata_for_reloading,
)
from vllm.model_executor.model_loader.weight_utils import default_weight_loader
from vllm.model_executor.utils import set_weight_attrs


class Lin(nn.Module):
    def __init__(self, n, k):
        super().__init__()
        self.weight = nn.Parameter(torch.zeros(n, k), requires_grad=False)
        set_weight_attrs(self.weight, {"weight_loader": default_weight_loader})


class Attn(nn.Module):
    def __init__(self):
        super().__init__()
        self.main, self.indexer = Lin(2, 3), Lin(1, 3)
        self.register_buffer("_fused", None, persistent=False)

    def fuse(self):  # as prepare_compressor_gemm_fusion (model-level PWAL, runs once)
        a, b = self.main.weight, self.indexer.weight
        fused = torch.cat((a, b), dim=0)
        with torch.no_grad():
            a.set_(fused[:2])
            b.set_(fused[2:])
        self._fused = fused


m = nn.Sequential(Attn())
attn = m[0]
record_metadata_for_reloading(m)
attn.main.weight.weight_loader(attn.main.weight, torch.ones(2, 3))
attn.indexer.weight.weight_loader(attn.indexer.weight, torch.ones(1, 3))
attn.fuse()
fused_ptr = attn._fused.data_ptr()
print("initial fused:", attn._fused.flatten().tolist())

initialize_layerwise_reload(m)
attn.main.weight.weight_loader(attn.main.weight, torch.full((2, 3), 2.0))
attn.indexer.weight.weight_loader(attn.indexer.weight, torch.full((1, 3), 3.0))
finalize_layerwise_reload(m, None)
print("after layerwise reload: fused buffer same object/ptr:", attn._fused.data_ptr() == fused_ptr)
print("after layerwise reload: fused values:", attn._fused.flatten().tolist())
print("main weight still a view of fused:",
      attn.main.weight.untyped_storage().data_ptr() == attn._fused.untyped_storage().data_ptr())

# kernel-format reload: param.copy_ under runtime names (inplace.py:107)
dict(m.named_parameters())["0.main.weight"].copy_(torch.full((2, 3), 5.0))
print("after kernel-format copy_: fused values:", attn._fused.flatten().tolist())
