"""The HF checkpoint a model-level case loads: its names and shapes from the model's own
parameters, fused parameters split back into the checkpoint's parts (no vLLM needed)."""

from __future__ import annotations

import torch
from torch import nn

from vllm_integration.class_models import ModelCase, model_cases


def _model() -> nn.Module:
    m = nn.Module()
    m.model = nn.Module()
    attn = nn.Module()
    attn.qkv_proj = nn.Linear(8, 16, bias=False)  # weight (16, 8): q 8 rows, k 4, v 4
    attn.k_norm = nn.LayerNorm(4, bias=False)
    m.model.self_attn = attn
    m.model.fc = nn.Linear(8, 8, bias=False)
    m.lm_head = nn.Linear(8, 8, bias=False)
    return m


def _case(**kw) -> ModelCase:
    return ModelCase("x", (), model_class="m.M", skip=("lm_head",),
                     checkpoint_names={"qkv_proj": (("q_proj", 8), ("k_proj", 4),
                                                    ("v_proj", 4))}, **kw)


def test_fused_parameters_are_split_into_their_checkpoint_parts():
    layout = _case().checkpoint_layout(_model())
    assert layout == {"self_attn.q_proj.weight": ((8, 8), torch.float32),
                      "self_attn.k_proj.weight": ((4, 8), torch.float32),
                      "self_attn.v_proj.weight": ((4, 8), torch.float32),
                      "self_attn.k_norm.weight": ((4,), torch.float32),
                      "fc.weight": ((8, 8), torch.float32)}


def test_seeded_weights_differ_by_seed_and_repeat_per_seed():
    case = _case()
    case.layout.update(case.checkpoint_layout(_model()))
    a, b, a2 = case.weights(0), case.weights(1), case.weights(0)
    assert set(a) == set(case.layout)
    assert all(torch.equal(a[n], a2[n]) and not torch.equal(a[n], b[n]) for n in a)


def test_canary_an_unsplit_fused_parameter_keeps_its_kernel_name():
    planted = ModelCase("x", (), model_class="m.M", skip=("lm_head",))  # no split declared
    assert "self_attn.qkv_proj.weight" in planted.checkpoint_layout(_model())


def test_the_model_cases_split_what_their_models_fuse():
    names = {c.name: c for c in model_cases()}
    assert set(names) == {"dflash2-beam-context-kv", "kimi-k3-dspark-context-kv"}
    # each split adds up to the fused rows the draft config gives
    dflash = names["dflash2-beam-context-kv"]
    assert sum(r for _, r in dflash.checkpoint_names["qkv_proj"]) == (2 + 1 + 1) * 32
    k3 = names["kimi-k3-dspark-context-kv"]
    assert sum(r for _, r in k3.checkpoint_names["fused_qkv_a_proj"]) == 32 + 64 + 32
