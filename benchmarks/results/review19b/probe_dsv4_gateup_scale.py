"""Position 25: models/deepseek_v4/amd/model.py:177 ``self._gateup_scale = ws`` in
``DeepseekV4MLP.prepare_gateup_preshuffle``, run from the model-level
``process_weights_after_loading``.

``ws = get_fp8_block_weight_scale(gate_up_proj)``; if ``ws`` is float8_e8m0fnu it is upcast to
a new fp32 tensor (real ``_upcast_e8m0_to_fp32``), else kept as a reference. Which dtype ``ws``
has at that point depends on the block-FP8 linear kernel's PWAL:
- AiterFp8BlockScaledMMKernel (ROCm, VLLM_ROCM_USE_AITER_LINEAR=1, the default) upcasts
  ``weight_scale_inv`` to fp32 with ``replace_parameter`` (aiter.py:426-427);
- TritonFp8BlockScaledMMKernel (ROCm with VLLM_ROCM_USE_AITER_LINEAR=0) keeps it e8m0
  (``process_fp8_weight_block_strategy``).
The reload is vLLM's real ``reload_weights(..., is_checkpoint_format=True)``.
"""

from __future__ import annotations

from types import SimpleNamespace

import torch

from probe_lib import PatternLayer, ToyModel, initial_load, make_param
from vllm.model_executor.layers.quantization.utils.fp8_utils import _upcast_e8m0_to_fp32
from vllm.model_executor.model_loader.reload.inplace import reload_weights
from vllm.model_executor.utils import replace_parameter

N, KB = 4, 2
calls = {"model_level": 0}


def create(layer):
    make_param(layer, "weight_scale_inv", (N, KB), torch.float8_e8m0fnu)


def pwal_aiter(layer):
    ws = layer.weight_scale_inv
    if ws.dtype == torch.float8_e8m0fnu:
        replace_parameter(layer, "weight_scale_inv", _upcast_e8m0_to_fp32(ws).contiguous())


def pwal_triton(layer):
    pass  # e4m3fn on a non-FNUZ device: process_fp8_weight_block_strategy keeps the e8m0 scale


class MLP(ToyModel):
    def process_weights_after_loading(self):  # model-level hook, as DeepseekV4 AMD defines
        calls["model_level"] += 1
        ws = self.gate_up_proj.weight_scale_inv
        if ws.dtype == torch.float8_e8m0fnu:
            ws = _upcast_e8m0_to_fp32(ws).contiguous()
        self._gateup_scale = ws


def ckpt(seed):
    g = torch.Generator().manual_seed(seed)
    exps = torch.randint(120, 134, (N, KB), generator=g, dtype=torch.uint8)
    return {"gate_up_proj.weight_scale_inv": exps.view(torch.float8_e8m0fnu)}


def run(label, pwal):
    calls["model_level"] = 0
    model = MLP(gate_up_proj=PatternLayer(create, pwal))
    c0, c1 = ckpt(0), ckpt(1)
    initial_load(model, c0, model_level=model.process_weights_after_loading)
    cfg = SimpleNamespace(model_config=SimpleNamespace(quantization="fp8", dtype=torch.bfloat16),
                          load_config=None, lora_config=None)
    reload_weights(cfg, model, iter(c1.items()), None, is_checkpoint_format=True)
    want = _upcast_e8m0_to_fp32(c1["gate_up_proj.weight_scale_inv"])
    kept = model.gate_up_proj.weight_scale_inv
    print(f"[{label}] model-level hook calls (1 = initial only): {calls['model_level']}; "
          f"_gateup_scale is kept param: {model._gateup_scale is kept}; "
          f"kept scale fresh: {torch.equal(_upcast_e8m0_to_fp32(kept) if kept.dtype != torch.float32 else kept, want)}; "
          f"_gateup_scale fresh: {torch.equal(model._gateup_scale, want)}")


if __name__ == "__main__":
    run("AITER linear (fp32 after PWAL)", pwal_aiter)
    run("Triton block (e8m0 kept)", pwal_triton)
