"""Every built-in vLLM spec is proven against vLLM 0.33.0's own code by some case: the MoE
``CASES``, the ``DRAFTERS``, the ``MLA_CASES`` (``tests/fixtures/vllm_*.py``) and the named
tests in ``tests/vllm/specs/test_specs_*.py`` and the other ``tests/vllm`` modules."""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.vllm

pytest.importorskip("vllm")

from derivgraph.spec.load import builtin_specs  # noqa: E402
from tests.fixtures.vllm_attention_layers import MLA_CASES  # noqa: E402
from tests.fixtures.vllm_drafters import DRAFTERS  # noqa: E402
from tests.fixtures.vllm_moe_cases import CASES  # noqa: E402

SPECS = builtin_specs()



def test_every_builtin_vllm_spec_is_exercised() -> None:
    """Each built-in vLLM spec is bound (and so proven against vLLM) by at least one case."""
    exercised = set().union(*(c.specs for c in CASES), *(d[3] for d in DRAFTERS.values()))
    exercised |= {"vllm-kimi-k3-mla-inverse-scales", "vllm-attention-kv-scale-floats",
                  "vllm-kimi-k3-mla-absorbed-kv-b-proj"}
    exercised |= set(MLA_CASES.values()) | {"vllm-mla-dcp-qrep"}
    exercised |= {"vllm-deepseek-v4-rocm-fused-compressor", "vllm-gemma4-mtp-full-lm-head",
                  "vllm-kimi-k3-kda-decode-front"}
    exercised |= {"vllm-glm5next-indexer-gate-fp32", "vllm-glm5next-kda-merged-conv-weight",
                  "vllm-lilicorr-fused-edge", "vllm-lilicorr-inference-buffers",
                  "vllm-kimi-k3-specialized-dense-down-tp16"}
    # bound on a real LlamaForCausalLM's Attention layers by tests/vllm/test_llama.py
    exercised |= {"vllm-attention-host-kv-scales"}
    # proven on vLLM's own Muse Spark post-load code by tests/vllm/test_muse_spark.py
    exercised |= {"vllm-muse-spark-residual-gate-coefficients",
                  "vllm-muse-spark-router-output-multiplier-fold"}
    # proven on vLLM's own pack_front (through the installed hook) by
    # tests/vllm/test_kimi_k3_moe_front.py
    exercised |= {"vllm-kimi-k3-packed-moe-front"}
    # bound on a HummingLinearKernel at each of its four holders by tests/vllm/test_coverage.py
    exercised |= {"vllm-humming-locks-kernel", "vllm-humming-locks-fp8-linear",
                  "vllm-humming-locks-scheme-kernel", "vllm-humming-locks-scheme-linear-kernel"}
    names = {s.name for s in SPECS if s.name.startswith("vllm-")}
    assert names == exercised, sorted(names ^ exercised)
