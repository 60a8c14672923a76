"""Collectives in formulas: ``all_gather`` and ``all_reduce`` over named process groups.

A formula names a group by string: ``all_gather(W_UK_T, 0, group='dcp')``,
``all_reduce(x, 'max', group='ep')``. The group names are the closed vocabulary
:class:`GroupName` (``tp``, ``dcp``, ``ep``). The core knows no engine: the caller registers a
plain ``torch.distributed`` process group per name with :func:`set_group` (the vLLM adapter,
``vllm_integration.groups.register_vllm_groups``, registers vLLM's device groups).

Shape inference knows the world size: ``all_gather`` multiplies the gathered dim by the size of
its group. Its ``out=`` variant gathers straight into the startup storage with
``all_gather_into_tensor`` when the gathered dim is 0 and ``out`` is contiguous.

With no group registered under a name:

* ``torch.distributed`` not initialized: the process is alone, world size 1, and a collective is
  the identity (``all_gather`` returns a copy, ``all_reduce`` the value), as vLLM's own group
  coordinator does for a group of one.
* ``torch.distributed`` initialized: which group is meant is unknown, so compiling the formula
  fails with rule ``DG040 collective-group`` (reported by the compiler at the spec's file:line).

Every rank must compile and run its plan together: the collectives run at compile (adoption
evaluates every formula) and in each reload pass, in the plan's fixed step order.
"""

from __future__ import annotations

import logging
from typing import Any

import torch
import torch.distributed as dist

from derivgraph.errors import CollectiveGroupError
from derivgraph.ops.registry import register_op
from derivgraph.spec.kinds import GroupName, ReduceOp

__all__ = [
    "CollectiveGroupError",
    "GroupName",
    "ReduceOp",
    "clear_groups",
    "get_group",
    "set_group",
    "world_size",
]

logger = logging.getLogger(__name__)


_GROUPS: dict[GroupName, Any] = {}


def _name(group: Any) -> GroupName:
    try:
        return GroupName(group)
    except ValueError:
        known = ", ".join(repr(g.value) for g in GroupName)
        raise CollectiveGroupError(f"unknown group {group!r}; use one of {known}") from None


def set_group(name: str | GroupName, group: Any) -> None:
    """Register ``group`` (a ``torch.distributed`` ProcessGroup) under ``name``; None removes it."""
    key = _name(name)
    if group is None:
        _GROUPS.pop(key, None)
    else:
        _GROUPS[key] = group
        logger.debug("collective group %s: world size %d", key.value, dist.get_world_size(group))


def clear_groups() -> None:
    """Forget every registered group."""
    _GROUPS.clear()


def get_group(name: str | GroupName) -> Any | None:
    """The process group registered under ``name``; None means a process alone (world size 1).

    Raises :class:`CollectiveGroupError` when none is registered but ``torch.distributed`` runs.
    """
    key = _name(name)
    if key in _GROUPS:
        return _GROUPS[key]
    if dist.is_available() and dist.is_initialized():
        raise CollectiveGroupError(
            f"no process group registered for {key.value!r} while torch.distributed is running; "
            f"call derivgraph.ops.collectives.set_group({key.value!r}, group) before compile_plan "
            "(vLLM: vllm_integration.groups.register_vllm_groups())")
    return None


def world_size(name: str | GroupName) -> int:
    """The number of ranks in group ``name`` (1 for a process alone)."""
    group = get_group(name)
    return 1 if group is None else dist.get_world_size(group)


# ---- all_gather ------------------------------------------------------------------------------

def _gather_dim0(x: torch.Tensor, group: Any, out: torch.Tensor) -> None:
    size = dist.get_world_size(group)
    try:
        dist.all_gather_into_tensor(out, x, group=group)
    except (RuntimeError, NotImplementedError):  # a backend without the fused collective
        dist.all_gather(list(out.chunk(size, 0)), x, group=group)


def _gather_dim(x: torch.Tensor, dim: int) -> int:
    if x.dim() == 0:
        raise ValueError("all_gather needs a tensor of at least one dim, not a 0-d tensor")
    return dim % x.dim()


def _all_gather(x: torch.Tensor, dim: int = 0, group: str = "tp") -> torch.Tensor:
    """Concatenate x from every rank of ``group`` along ``dim`` (rank order)."""
    _gather_dim(x, dim)
    pg = get_group(group)
    if pg is None:
        return x.clone()
    dim = dim % x.dim()
    size = dist.get_world_size(pg)
    moved = x.movedim(dim, 0).contiguous()
    gathered = torch.empty((size * moved.shape[0], *moved.shape[1:]), dtype=x.dtype,
                           device=x.device)
    _gather_dim0(moved, pg, gathered)
    return gathered.movedim(0, dim).contiguous()


def _all_gather_out(x: torch.Tensor, dim: int = 0, group: str = "tp", *,
                    out: torch.Tensor) -> torch.Tensor:
    pg = get_group(group)
    if pg is not None and _gather_dim(x, dim) == 0 and out.is_contiguous():
        _gather_dim0(x.contiguous(), pg, out)  # straight into the startup storage
        return out
    return out.copy_(_all_gather(x, dim, group))


def _all_gather_infer(x: torch.Tensor, dim: int = 0, group: str = "tp") -> torch.Tensor:
    shape = list(x.shape)
    shape[_gather_dim(x, dim)] *= world_size(group)
    return torch.empty(shape, dtype=x.dtype, device="meta")


# ---- all_reduce ------------------------------------------------------------------------------

def _reduce_op(op: str) -> ReduceOp:
    try:
        return ReduceOp(op)
    except ValueError:
        known = ", ".join(repr(o.value) for o in ReduceOp)
        raise ValueError(f"unknown reduction {op!r}; use one of {known}") from None


def _all_reduce(x: torch.Tensor, op: str = "sum", group: str = "tp") -> torch.Tensor:
    """x reduced elementwise (``sum``, ``max``, ``min``, ``product``) over ``group``."""
    reduce = _reduce_op(op)
    out = x.clone(memory_format=torch.contiguous_format)
    pg = get_group(group)
    if pg is not None:
        dist.all_reduce(out, op=reduce.to_dist(), group=pg)
    return out


def _all_reduce_out(x: torch.Tensor, op: str = "sum", group: str = "tp", *,
                    out: torch.Tensor) -> torch.Tensor:
    reduce = _reduce_op(op)
    pg = get_group(group)
    if not out.is_contiguous():
        return out.copy_(_all_reduce(x, op, group))
    out.copy_(x)
    if pg is not None:
        dist.all_reduce(out, op=reduce.to_dist(), group=pg)
    return out


def _all_reduce_infer(x: torch.Tensor, op: str = "sum", group: str = "tp") -> torch.Tensor:
    _reduce_op(op)
    world_size(group)  # an unregistered group in a distributed run fails here, at compile
    return torch.empty(x.shape, dtype=x.dtype, device="meta")


register_op("all_gather", _all_gather, out=_all_gather_out, infer=_all_gather_infer)
register_op("all_reduce", _all_reduce, out=_all_reduce_out, infer=_all_reduce_infer)
