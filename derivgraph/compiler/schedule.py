"""Scheduling the reload pass: a dependency level per step.

A step runs one level past the latest level of the nodes it reads, and of every step that
touched the storage it reads (written) or writes (read or written): tensors that alias one
storage are ordered even when no graph edge joins them. Steps of one level may run in any
order, so :mod:`derivgraph.compiler.codegen` groups them into ``torch._foreach_*`` calls.
"""

from __future__ import annotations

import torch

from derivgraph.compiler.lower import Action, LowerContext, Step

__all__ = ["levels"]


def levels(ctx: LowerContext, steps: list[Step]) -> list[int]:
    """A dependency level per step: after what it reads (values and aliasing storage)."""
    level_of_node: dict[str, int] = {}
    last_write: dict[int, int] = {}
    last_read: dict[int, int] = {}
    levels = []
    step_reads = [step.reads() for step in steps]
    ptr = _storage_addresses(ctx, [r for refs in step_reads for r in refs]
                             + [s.target for s in steps if s.action in _WRITES])
    no_write: tuple[int, ...] = ()
    for step, step_refs in zip(steps, step_reads):
        reads = {ptr[r] for r in step_refs} - _NONE
        at = ptr[step.target] if step.action in _WRITES else None
        writes = no_write if at is None else (at,)
        lvl = 0  # one past the latest level of what it reads, and of what touched its memory
        for ref in step_refs:
            after = level_of_node.get(ref, -1) + 1
            if after > lvl:
                lvl = after
        for p in reads:
            after = last_write.get(p, -1) + 1
            if after > lvl:
                lvl = after
        for p in writes:
            after = max(last_write.get(p, -1), last_read.get(p, -1)) + 1
            if after > lvl:
                lvl = after
        levels.append(lvl)
        level_of_node[step.node] = lvl
        if step.target:
            level_of_node[step.target] = lvl
        for p in reads:
            if last_read.get(p, -1) < lvl:
                last_read[p] = lvl
        for p in writes:
            if last_write.get(p, -1) < lvl:
                last_write[p] = lvl
    return levels


_WRITES = frozenset({Action.OUT, Action.COPY})  # what step_writes gives addresses for
_NONE = frozenset({None})


def _storage_addresses(ctx: LowerContext, refs: list[str]) -> dict[str, int | None]:
    """The one storage address of each ref's bound tensor (:meth:`storage_ptrs`, read in one
    sweep; None: nothing bound, not a tensor, or meta; none move while scheduling)."""
    refs = list(dict.fromkeys(refs))
    out: dict[str, int | None] = {}
    for ref, value in zip(refs, ctx.bound_values(refs, None)):
        out[ref] = value.untyped_storage().data_ptr() \
            if isinstance(value, torch.Tensor) and not value.is_meta else None
    return out
