"""Register vLLM's process groups as derivgraph's collective groups (``tp``, ``dcp``, ``ep``).

The plugin's post-load hook (``vllm_integration.hooks``) calls :func:`register_vllm_groups` in
every worker before it compiles a plan (vLLM has initialized model parallelism by then), so
formulas such as ``all_gather(W_UK_T, 0, group='dcp')`` run on the same device groups as
vLLM's own ``get_dcp_group().all_gather`` without user code. Calling it again (every reload's
post-load step does) re-registers the same groups: idempotent. vLLM is imported only when
this is called.
"""

from __future__ import annotations

import logging

from derivgraph.errors import CollectiveGroupError
from derivgraph.ops.collectives import GroupName, get_group, set_group

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
    changed = False
    for name, getter in getters.items():
        try:
            coordinator = getter()
        except AssertionError:  # this group is not initialized in this vLLM configuration
            continue
        changed |= _registered(name) is not coordinator.device_group
        set_group(name, coordinator.device_group)
        sizes[name.value] = coordinator.world_size
    if changed:
        logger.info("derivgraph collective groups from vLLM: %s", sizes)
    return sizes


def _registered(name: GroupName) -> object | None:
    try:
        return get_group(name)
    except CollectiveGroupError:  # torch.distributed runs and nothing is registered yet
        return None
