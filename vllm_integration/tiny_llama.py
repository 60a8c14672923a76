"""A tiny real vLLM 0.33.0 ``LlamaForCausalLM`` on CPU, loaded and reloaded by vLLM's own code.

What ``derivgraph bench --workload vllm`` (:mod:`vllm_integration.reload_bench`) and the vLLM
tests run: ``VLLM_TARGET_DEVICE=cpu`` (set before vLLM is imported), a ``ModelConfig`` from a
local ``config.json``, one gloo process group of world size 1, ``initialize_model``,
``load_weights`` and vLLM's ``process_weights_after_loading`` (where the plugin's hook compiles
the plan). The model gets a model-level post-load step building two derived tensors (a fused
K/V stack over all layers, like the DFlash drafters, and a transposed K/V copy on each
``LlamaAttention``), declared in :data:`SPECS`; vLLM never reruns a model-level post-load step
on reload. :func:`tiny_llama_vllm` installs that step on vLLM's ``LlamaForCausalLM`` class and
sets up process-global state (the process group): call it in a process of its own.
"""

from __future__ import annotations

import contextlib
import json
import socket
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import torch
from torch import nn

__all__ = ["CONFIG", "SPECS", "checkpoint", "cold_start", "tiny_llama_vllm"]

#: the specs of the two derived tensors the post-load step builds
SPECS = Path(__file__).with_name("tiny_llama.yaml")

CONFIG = {
    "architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": 64,
    "intermediate_size": 128, "num_attention_heads": 4, "num_key_value_heads": 2,
    "num_hidden_layers": 2, "vocab_size": 256, "max_position_embeddings": 128,
    "rms_norm_eps": 1e-5, "rope_theta": 10000.0, "tie_word_embeddings": False,
    "torch_dtype": "float32", "hidden_act": "silu", "bos_token_id": 1, "eos_token_id": 2,
}


def _post_load(self) -> None:  # noqa: ANN001 - installed on LlamaForCausalLM
    layers = [layer for layer in self.model.layers if hasattr(layer, "self_attn")]
    q = layers[0].self_attn.q_size
    self._fused_kv = torch.cat([layer.self_attn.qkv_proj.weight[q:] for layer in layers], 0)
    for layer in layers:
        attn = layer.self_attn
        attn._kv_weight_t = attn.qkv_proj.weight[q:].t().contiguous()


def checkpoint(seed: int) -> dict[str, torch.Tensor]:
    """HF-named random weights (different seeds, different weights)."""
    gen = torch.Generator().manual_seed(seed)
    h, inter, layers = CONFIG["hidden_size"], CONFIG["intermediate_size"], 2
    kv = CONFIG["num_key_value_heads"] * h // CONFIG["num_attention_heads"]
    shapes = {"model.embed_tokens.weight": (256, h), "model.norm.weight": (h,),
              "lm_head.weight": (256, h)}
    for i in range(layers):
        p = f"model.layers.{i}."
        shapes.update({
            p + "self_attn.q_proj.weight": (h, h), p + "self_attn.k_proj.weight": (kv, h),
            p + "self_attn.v_proj.weight": (kv, h), p + "self_attn.o_proj.weight": (h, h),
            p + "mlp.gate_proj.weight": (inter, h), p + "mlp.up_proj.weight": (inter, h),
            p + "mlp.down_proj.weight": (h, inter), p + "input_layernorm.weight": (h,),
            p + "post_attention_layernorm.weight": (h,),
        })
    return {n: torch.randn(s, generator=gen) * 0.1 for n, s in shapes.items()}


@contextlib.contextmanager
def tiny_llama_vllm(workdir: Path) -> Iterator[tuple[Any, Any]]:
    """vLLM set up for the tiny Llama on CPU: plugins loaded (derivgraph's hooks), configs,
    one gloo process group; yields ``(model_config, vllm_config)`` inside vLLM's config."""
    from vllm.config import (
        DeviceConfig,
        LoadConfig,
        ModelConfig,
        VllmConfig,
        set_current_vllm_config,
    )
    from vllm.distributed import init_distributed_environment, initialize_model_parallel
    from vllm.model_executor.models.llama import LlamaForCausalLM
    from vllm.plugins import load_general_plugins

    load_general_plugins()  # what every vLLM process does: registers derivgraph's hooks
    LlamaForCausalLM.process_weights_after_loading = _post_load
    (workdir / "config.json").write_text(json.dumps(CONFIG))
    mc = ModelConfig(model=str(workdir), tokenizer=str(workdir), skip_tokenizer_init=True,
                     dtype="float32", enforce_eager=True, max_model_len=128)
    vc = VllmConfig(model_config=mc, device_config=DeviceConfig(device="cpu"),
                    load_config=LoadConfig(load_format="dummy"))
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    with set_current_vllm_config(vc):
        init_distributed_environment(world_size=1, rank=0, local_rank=0,
                                     distributed_init_method=f"tcp://127.0.0.1:{port}",
                                     backend="gloo")
        initialize_model_parallel(1, 1)
        yield mc, vc


def cold_start(mc: Any, vc: Any, weights: dict[str, torch.Tensor], prefix: str) -> nn.Module:
    """A Llama built, loaded with ``weights`` and post-processed by vLLM's own loader steps
    (a distinct ``prefix`` per model: attention layers register by name in the config)."""
    from vllm.model_executor.model_loader import utils

    model = utils.initialize_model(vllm_config=vc, prefix=prefix)
    model.load_weights(iter(weights.items()))
    utils.process_weights_after_loading(model, mc, torch.device("cpu"))
    return model
