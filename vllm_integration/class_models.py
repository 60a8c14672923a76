"""Model-level cases: vLLM's own draft model classes, tiny, through vLLM's load and reload.

Some undeclared error classes store derived tensors on the model itself, outside any quant
method: the DFlash2 Beam drafter stacks every layer's K/V projection in its ``load_weights``,
the K3 DSpark drafter stacks the KV norms in its model-level ``process_weights_after_loading``.
A :class:`ModelCase` builds the real model class from a synthetic HF config (two layers, tiny
dims) with vLLM's ``initialize_model`` under a CPU ``VllmConfig`` (a real ``ModelConfig`` of a
tiny target on disk), loads an HF-named seeded checkpoint through the model's own
``load_weights``, runs vLLM's ``process_weights_after_loading`` and reloads through vLLM's
``reload_weights(..., is_checkpoint_format=True)``.

Stand-ins, stated: the speculative config is a namespace carrying the draft's HF config (a real
``SpeculativeConfig`` needs a draft model on disk and a method registry); the platform's
attention questions (which attention backend, which MLA prefill backend) are answered as
vLLM's ``CpuPlatform`` answers them, because the installed build's platform (no
``VLLM_TARGET_DEVICE``) answers none (:data:`CPU_ATTENTION`).
"""

from __future__ import annotations

import contextlib
import json
import tempfile
import types
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch
from torch import nn

from vllm_integration.case_base import (
    NotRunnable,
    VllmCase,
    load_class,
    random_tensor,
    vllm_runtime,
)

__all__ = ["CPU_ATTENTION", "ModelCase", "model_cases"]

#: the platform answer the model cases give (see :data:`class_cases.PLATFORM_ANSWERS`)
CPU_ATTENTION = ("'is this a CPU?' for the attention and MLA-prefill backend choice "
                 "(vLLM's CpuPlatform answers them)")

_TARGET = {"architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": 64,
           "intermediate_size": 128, "num_attention_heads": 4, "num_key_value_heads": 2,
           "num_hidden_layers": 2, "vocab_size": 64, "max_position_embeddings": 64,
           "rms_norm_eps": 1e-5, "rope_theta": 10000.0, "torch_dtype": "bfloat16"}


@contextlib.contextmanager
def _cpu_attention() -> Iterator[None]:
    from vllm.platforms import current_platform
    from vllm.platforms.cpu import CpuPlatform
    from vllm.v1.attention import selector

    platform = type(current_platform)
    names = ("get_attn_backend_cls", "get_mla_prefill_backend_cls")
    saved = {n: platform.__dict__.get(n) for n in names}
    for n in names:
        setattr(platform, n, getattr(CpuPlatform, n))  # bound to CpuPlatform
    try:
        yield
    finally:
        for n, original in saved.items():
            if original is None:
                delattr(platform, n)
            else:
                setattr(platform, n, original)
        selector._cached_get_attn_backend.cache_clear()  # no CPU answer outlives the case


@contextlib.contextmanager
def _model_runtime(draft: Mapping[str, Any], cache_dtype: str) -> Iterator[Any]:
    """A CPU VllmConfig (real model config of a tiny target, the draft's HF config as the
    speculative config), vLLM's one-process group, the CPU attention answers."""
    from transformers import PretrainedConfig
    from vllm.config import CacheConfig, DeviceConfig, ModelConfig, VllmConfig

    with tempfile.TemporaryDirectory(prefix="dg-model-") as tmp:
        (Path(tmp) / "config.json").write_text(json.dumps(_TARGET))
        model_config = ModelConfig(model=tmp, tokenizer=tmp, skip_tokenizer_init=True,
                                   dtype="bfloat16", enforce_eager=True, max_model_len=64)
        config = VllmConfig(model_config=model_config, device_config=DeviceConfig("cpu"),
                            cache_config=CacheConfig(cache_dtype=cache_dtype))
        object.__setattr__(config, "speculative_config", types.SimpleNamespace(
            draft_model_config=types.SimpleNamespace(hf_config=PretrainedConfig(**draft),
                                                     quantization=None),
            num_speculative_tokens=3, enable_adaptive_verification=False))
        with vllm_runtime(config), _cpu_attention():
            yield config


@dataclass(frozen=True)
class ModelCase(VllmCase):
    """A whole (tiny) vLLM model class; ``checkpoint_names`` maps a fused parameter to the
    HF names and row counts it is loaded from, ``skip`` the parameters the checkpoint does
    not ship, ``prefix`` what the model's ``load_weights`` strips from parameter names."""

    model_class: str = ""
    draft: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)
    cache_dtype: str = field(default="auto", repr=False, compare=False)
    checkpoint_names: dict[str, tuple[tuple[str, int], ...]] = field(
        default_factory=dict, repr=False, compare=False)
    skip: tuple[str, ...] = field(default=(), repr=False, compare=False)
    prefix: str = field(default="model.", repr=False, compare=False)
    layout: dict[str, tuple[tuple[int, ...], torch.dtype]] = field(
        default_factory=dict, repr=False, compare=False)  # set by build

    def layer_modules(self, model: nn.Module) -> list[nn.Module]:
        return list(model.modules())

    def _check(self) -> None:
        if not self.model_class:
            raise NotRunnable("no model class defined")

    def checkpoint_layout(self, model: nn.Module) -> dict[str, tuple[tuple[int, ...],
                                                                      torch.dtype]]:
        """HF names, shapes and dtypes of a freshly built ``model``'s own parameters (before
        the post-load step adds kernel-format ones)."""
        out = {}
        for name, p in model.named_parameters():
            if any(s in name for s in self.skip):
                continue
            stem, _, leaf = name.removeprefix(self.prefix).rpartition(".")
            owner, _, fused = stem.rpartition(".")
            for part, rows in self.checkpoint_names.get(fused, ((fused, p.shape[0]),)):
                out[".".join(filter(None, (owner, part, leaf)))] = ((rows, *p.shape[1:]),
                                                                   p.dtype)
        return out

    def weights(self, seed: int) -> dict[str, torch.Tensor]:
        """A seeded HF-format checkpoint of the layout the last build recorded."""
        gen = torch.Generator().manual_seed(seed)
        return {name: random_tensor(shape, dtype, name.rpartition(".")[2], gen)
                for name, (shape, dtype) in self.layout.items()}

    def _model(self, config: Any) -> nn.Module:
        from vllm.model_executor.model_loader.utils import initialize_model
        from vllm.utils.torch_utils import set_default_torch_dtype

        with set_default_torch_dtype(config.model_config.dtype), torch.device("cpu"):
            return initialize_model(vllm_config=config, model_class=load_class(self.model_class))

    def build(self, seed: int) -> nn.Module:
        """vLLM's cold start: initialize_model, load_weights, process_weights_after_loading."""
        from vllm.model_executor.model_loader.utils import process_weights_after_loading

        self._check()
        with self._running(), _model_runtime(self.draft, self.cache_dtype) as config:
            model = self._model(config)
            self.layout.clear()
            self.layout.update(self.checkpoint_layout(model))
            model.load_weights(iter(self.weights(seed).items()))
            process_weights_after_loading(model, config.model_config, torch.device("cpu"))
        return model

    def reload(self, model: nn.Module, seed: int) -> None:
        """vLLM's ``reload_weights`` from an HF-format checkpoint (the RL weight-sync path)."""
        from vllm.model_executor.model_loader.reload.inplace import reload_weights

        with self._running(), _model_runtime(self.draft, self.cache_dtype) as config:
            reload_weights(config, model, iter(self.weights(seed).items()), None,
                           is_checkpoint_format=True)


_ROPE = {"rope_type": "default", "rope_theta": 10000.0}
#: DFlash2 Beam drafter: two non-causal sliding-window layers, head_dim 32
_DFLASH2 = dict(vocab_size=64, hidden_size=64, intermediate_size=64, num_hidden_layers=2,
                num_attention_heads=2, num_key_value_heads=1, head_dim=32,
                layer_types=["sliding_attention"] * 2, is_causal=False, sliding_window=8,
                max_position_embeddings=64, rope_parameters=_ROPE, rms_norm_eps=1e-6,
                dflash_config=dict(conv_kernel_size=2, conv_group_size=16,
                                   target_layer_ids=[0, 1], selector_rank=8, selector_top_k=2,
                                   final_logit_softcapping=30.0))
#: K3 DSpark drafter: two MLA layers (q_lora 32, kv_lora 64, rope 32)
_K3 = dict(vocab_size=64, draft_vocab_size=64, hidden_size=64, intermediate_size=64,
           num_hidden_layers=2, num_attention_heads=2, qk_nope_head_dim=32, qk_rope_head_dim=32,
           v_head_dim=32, q_lora_rank=32, kv_lora_rank=64, hidden_act="silu", rms_norm_eps=1e-6,
           target_hidden_size=64, num_target_layers=2, markov_rank=8,
           max_position_embeddings=64, rope_parameters=_ROPE)
_GATE_UP = (("gate_proj", 64), ("up_proj", 64))


def model_cases() -> list[VllmCase]:
    """The model-level cases of the undeclared error classes."""
    return [
        ModelCase("dflash2-beam-context-kv", ("vllm.models.beam.nvidia.dflash2.DFlash2BeamModel",),
                  model_class="vllm.models.beam.nvidia.dflash2.DFlash2BeamForCausalLM",
                  draft=_DFLASH2, skip=("lm_head",),
                  checkpoint_names={"qkv_proj": (("q_proj", 64), ("k_proj", 32),
                                                 ("v_proj", 32)), "gate_up_proj": _GATE_UP}),
        # with the CPU answers the KV cache is bf16: CPU's MLA backends refuse fp8
        ModelCase("kimi-k3-dspark-context-kv",
                  ("vllm.models.kimi_k3.nvidia.dspark_mla.K3DSparkModel",),
                  model_class="vllm.models.kimi_k3.nvidia.dspark_mla.K3DSparkForCausalLM",
                  draft=_K3, skip=("context_kv_proj",),
                  checkpoint_names={"fused_qkv_a_proj": (("q_a_proj", 32),
                                                         ("kv_a_proj_with_mqa", 96)),
                                    "gate_up_proj": _GATE_UP}),
    ]
