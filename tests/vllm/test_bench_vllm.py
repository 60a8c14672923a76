"""``derivgraph bench --workload vllm``: vLLM 0.33.0's ``reload_weights`` on the tiny Llama
(:mod:`vllm_integration.tiny_llama`) with the plugin against without, as one JSON object.

The figures are timings, so what is asserted is what they must be whatever the machine: both
arms timed every round, the ratio the one of the medians printed, the plugin's reload leaving
no derived tensor moved, the plan's size; and the two refusals (a CUDA device, no vLLM)."""

from __future__ import annotations

import json

import pytest

from derivgraph.cli import main

pytestmark = [pytest.mark.vllm, pytest.mark.slow]


def test_bench_vllm_prints_the_plugin_ratio(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["bench", "--workload", "vllm", "--repeat", "3", "--format", "json"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert result["model"] == "tiny LlamaForCausalLM (vllm_integration/tiny_llama.py)"
    assert (result["repeat"], result["mode"], result["clock"]) == (3, "refill", "cpu")
    runs = result["runs_ms"]
    assert sorted(runs) == ["off", "refill"]
    assert len(runs["off"]) == len(runs["refill"]) == 3 and min(runs["off"] + runs["refill"]) > 0
    assert result["vllm_off_ms"] == pytest.approx(sorted(runs["off"])[1], abs=1e-3)
    assert result["vllm_plugin_ms"] == pytest.approx(sorted(runs["refill"])[1], abs=1e-3)
    assert result["plugin_over_off"] == pytest.approx(
        result["vllm_plugin_ms"] / result["vllm_off_ms"], abs=2e-3)
    # every timed reload filed under the arm of the reload before it: three rounds run
    # off refill | refill off | refill off after a warm-up ending with refill
    assert {k: v["n"] for k, v in result["by_previous"].items()} == {
        "off after refill": 3, "refill after off": 2, "refill after refill": 1}
    assert result["moved_after_plugin_reload"] == 0  # the plugin's reload kept every address
    # the two derived tensors of tiny_llama.yaml per model (the fused stack, each layer's
    # transposed copy) plus what the built-in library binds on vLLM's own layers
    assert result["derived"] >= 3


def test_bench_vllm_refuses_cuda(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["bench", "--workload", "vllm", "--device", "cuda"]) == 2
    assert "CPU only" in capsys.readouterr().err


def test_bench_vllm_without_vllm_says_how_to_install(
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    import importlib.util

    find_spec = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *a: None if name == "vllm" else find_spec(name, *a))
    assert main(["bench", "--workload", "vllm"]) == 2
    assert "pip install 'derivgraph[vllm]'" in capsys.readouterr().err
