"""End to end on a GPU: ``LLM(...)`` with CUDA graphs, the plugin loaded by vLLM in its worker
process, the worker extension's RPCs, and ``reload_weights`` A -> B -> A through
``collective_rpc`` in strict mode. Skipped without CUDA (run with ``-m gpu``).

Not run yet: the GPU machine available to the author had no vLLM and no network. A tiny
random LlamaForCausalLM is written as a safetensors checkpoint (no download). Greedy
outputs after A -> B -> A must repeat the first A outputs exactly, B must differ, and the
census must find nothing moved and nothing undeclared.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

pytest.importorskip("vllm")

pytestmark = [pytest.mark.vllm, pytest.mark.gpu, pytest.mark.slow]

SPECS = Path(__file__).resolve().parents[2] / "vllm_integration" / "tiny_llama.yaml"
EXTENSION = "vllm_integration.worker_extension.DerivgraphWorkerExtension"


def _checkpoint(path: Path, seed: int) -> Path:
    import torch
    from safetensors.torch import save_file

    from vllm_integration.tiny_llama import CONFIG, checkpoint

    path.mkdir(parents=True, exist_ok=True)
    (path / "config.json").write_text(json.dumps({**CONFIG, "torch_dtype": "bfloat16"}))
    weights = {k: (v * 0.5).to(torch.bfloat16).contiguous()
               for k, v in checkpoint(seed).items()}
    save_file(weights, str(path / "model.safetensors"))
    return path


def _total(results: list[dict], key: str) -> int:
    return sum(m[key] for worker in results for m in worker["models"])


def test_llm_reload_a_b_a_with_cuda_graphs_in_strict_mode(tmp_path, monkeypatch):
    import torch

    if not torch.cuda.is_available():
        pytest.skip("needs a CUDA GPU")
    from vllm import LLM, SamplingParams

    monkeypatch.setenv("DERIVGRAPH_VLLM_MODE", "strict")
    monkeypatch.setenv("DERIVGRAPH_SPECS", str(SPECS))
    a, b = _checkpoint(tmp_path / "a", 0), _checkpoint(tmp_path / "b", 1)
    llm = LLM(model=str(a), skip_tokenizer_init=True, worker_extension_cls=EXTENSION,
              gpu_memory_utilization=0.2, max_model_len=128, dtype="bfloat16",
              enforce_eager=False)
    prompts = [{"prompt_token_ids": [1, 17, 33, 40 + i, 99]} for i in range(4)]
    sampling = SamplingParams(temperature=0.0, max_tokens=16, detokenize=False)

    def generate() -> list[list[int]]:
        return [list(o.outputs[0].token_ids) for o in llm.generate(prompts, sampling)]

    summary = llm.collective_rpc("derivgraph_summary")
    assert summary[0]["mode"] == "strict" and summary[0]["hooks_installed"]
    assert summary[0]["models"][0]["model"] == "LlamaForCausalLM"
    assert summary[0]["models"][0]["derived"] > 0
    first_a = generate()
    for path in (b, a):  # strict: a reload that moves anything raises through the RPC
        llm.collective_rpc("reload_weights", kwargs={"weights_path": str(path),
                                                     "is_checkpoint_format": True})
        if path == b:
            out_b = generate()
    assert generate() == first_a
    assert out_b != first_a
    counters = llm.collective_rpc("derivgraph_counters")
    audit = llm.collective_rpc("derivgraph_audit")
    assert _total(counters, "reloads") == 2 and _total(counters, "strict_failures") == 0
    assert _total(audit, "moved") == 0 and _total(audit, "undeclared") == 0, audit
