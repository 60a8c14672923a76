"""Register vLLM's process groups as derivgraph's collective groups (``tp``, ``dcp``, ``ep``).

Call :func:`register_vllm_groups` in every worker after vLLM initialized model parallelism and
before the first ``compile_plan`` (the plugin's initial-load hook is the place), so formulas
such as ``all_gather(W_UK_T, 0, group='dcp')`` run on the same device groups as vLLM's own
``get_dcp_group().all_gather``. vLLM is imported only when this is called.
"""

from __future__ import annotations

import logging

from derivgraph.collectives import GroupName, set_group

__all__ = ["register_vllm_groups"]

logger = logging.getLogger(__name__)


def register_vllm_groups() -> dict[str, int]:
    """Register vLLM's TP, DCP and EP device groups; returns each group's world size.

    Does nothing (returns ``{}``) when vLLM's model parallelism is not initialized: derivgraph
    then treats a process as alone (world size 1) as long as ``torch.distributed`` is not
    running either.
    """
    from vllm.distributed import parallel_state as ps

    if not ps.model_parallel_is_initialized():
        logger.debug("vLLM model parallelism not initialized; no collective groups registered")
        return {}
    getters = {GroupName.TP: ps.get_tp_group, GroupName.DCP: ps.get_dcp_group,
               GroupName.EP: ps.get_ep_group}
    sizes: dict[str, int] = {}
    for name, getter in getters.items():
        try:
            coordinator = getter()
        except AssertionError:  # this group is not initialized in this vLLM configuration
            continue
        set_group(name, coordinator.device_group)
        sizes[name.value] = coordinator.world_size
    logger.info("derivgraph collective groups from vLLM: %s", sizes)
    return sizes
