"""vllm_integration.groups registers vLLM's real device groups (gloo, world size 1, CPU)."""

from __future__ import annotations

import pytest
import torch

pytestmark = pytest.mark.vllm
pytest.importorskip("vllm")


def test_nothing_is_registered_before_model_parallel_init() -> None:
    from derivgraph.ops.collectives import clear_groups
    from vllm_integration.groups import register_vllm_groups

    clear_groups()
    assert register_vllm_groups() == {}


def test_register_vllm_groups_after_model_parallel_init(vllm_parallel) -> None:
    from derivgraph.ops import OPS
    from derivgraph.ops.collectives import get_group, world_size
    from vllm_integration.groups import register_vllm_groups

    ps = vllm_parallel
    assert register_vllm_groups() == {"tp": 1, "dcp": 1, "ep": 1}
    assert get_group("tp") is ps.get_tp_group().device_group
    assert get_group("dcp") is ps.get_dcp_group().device_group
    assert world_size("dcp") == 1
    x = torch.arange(6.0).reshape(3, 2)
    assert torch.equal(OPS["all_gather"].fn(x, 0, "dcp"), ps.get_dcp_group().all_gather(x, 0))
