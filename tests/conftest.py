"""Shared fixtures; GPU tests skip without CUDA."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

FIXTURES = Path(__file__).parent / "fixtures"


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if torch.cuda.is_available():
        return
    skip = pytest.mark.skip(reason="needs a CUDA GPU")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip)


@pytest.fixture
def fixtures() -> Path:
    return FIXTURES


@pytest.fixture
def fresh_hooks():
    """vLLM hooks uninstalled for the test; the previous state restored afterwards."""
    from vllm_integration import hooks

    was = hooks.is_installed()
    hooks.uninstall()
    try:
        yield
    finally:
        hooks.uninstall()
        if was:
            hooks.install()


def free_port() -> int:
    """A free localhost TCP port (for a torch.distributed rendezvous)."""
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture()
def vllm_parallel():
    """vLLM's model parallelism initialized on one gloo rank; torn down afterwards."""
    from vllm.config import DeviceConfig, VllmConfig, set_current_vllm_config
    from vllm.distributed import parallel_state as ps

    from derivgraph.ops.collectives import clear_groups

    clear_groups()
    with set_current_vllm_config(VllmConfig(device_config=DeviceConfig(device="cpu"))):
        ps.init_distributed_environment(
            world_size=1, rank=0, local_rank=0, backend="gloo",
            distributed_init_method=f"tcp://127.0.0.1:{free_port()}")
        try:
            ps.initialize_model_parallel(1, 1)
            yield ps
        finally:
            clear_groups()
            ps.destroy_model_parallel()
            ps.destroy_distributed_environment()
