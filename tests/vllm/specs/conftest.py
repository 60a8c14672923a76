"""Shared set-up of the built-in spec tests against vLLM 0.33.0's own code on CPU."""

from __future__ import annotations

import pytest


@pytest.fixture(scope="module", autouse=True)
def _cpu_accelerator():
    """The TRT-LLM experts constructors ask the accelerator for a device index; on a CPU-only
    machine that raises "Found no NVIDIA driver". Point it at the CPU for each module here."""
    pytest.importorskip("vllm")
    from tests.fixtures.vllm_moe_layers import cpu_accelerator  # lazy: needs vLLM

    with cpu_accelerator():
        yield
