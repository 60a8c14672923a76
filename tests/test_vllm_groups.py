"""vllm_integration.groups registers vLLM's real device groups (gloo, world size 1, CPU)."""

from __future__ import annotations

import pytest
import torch

from tests.conftest import free_port

pytestmark = pytest.mark.vllm
pytest.importorskip("vllm")


def test_register_vllm_groups_after_model_parallel_init() -> None:
    from vllm.config import DeviceConfig, VllmConfig, set_current_vllm_config
    from vllm.distributed import parallel_state as ps

    from derivgraph.collectives import clear_groups, get_group, world_size
    from derivgraph.ops import OPS
    from vllm_integration.groups import register_vllm_groups

    clear_groups()
    assert register_vllm_groups() == {}  # nothing initialized: nothing registered
    with set_current_vllm_config(VllmConfig(device_config=DeviceConfig(device="cpu"))):
        ps.init_distributed_environment(
            world_size=1, rank=0, local_rank=0, backend="gloo",
            distributed_init_method=f"tcp://127.0.0.1:{free_port()}")
        try:
            ps.initialize_model_parallel(1, 1)
            assert register_vllm_groups() == {"tp": 1, "dcp": 1, "ep": 1}
            assert get_group("tp") is ps.get_tp_group().device_group
            assert get_group("dcp") is ps.get_dcp_group().device_group
            assert world_size("dcp") == 1
            x = torch.arange(6.0).reshape(3, 2)
            assert torch.equal(OPS["all_gather"].fn(x, 0, "dcp"),
                               ps.get_dcp_group().all_gather(x, 0))
        finally:
            clear_groups()
            ps.destroy_model_parallel()
            ps.destroy_distributed_environment()
