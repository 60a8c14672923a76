"""Scheduling the reload pass: a dependency level per step.

A step runs one level past the latest level of the nodes it reads, and of every step that
touched the storage it reads (written) or writes (read or written): tensors that alias one
storage are ordered even when no graph edge joins them. Steps of one level may run in any
order, so :mod:`derivgraph.compiler.codegen` groups them into ``torch._foreach_*`` calls. The
rows of a stamped table take their template's levels where
:mod:`derivgraph.compiler.schedule_layers` proves them equal (and this module, that no other step
touches their nodes or storage).
"""

from __future__ import annotations

from collections.abc import Sequence

import torch

from derivgraph.compiler.lower import LayerSteps, LowerContext, Step
from derivgraph.compiler.schedule_layers import WRITES, RowLevels, layer_fence, row_levels

__all__ = ["compact_levels", "levels"]


def levels(ctx: LowerContext, steps: list[Step], layers: Sequence[LayerSteps] = ()) -> list[int]:
    """A dependency level per step: after what it reads (values and aliasing storage); the
    proven rows of ``layers`` (:func:`~derivgraph.compiler.schedule_layers.row_levels`) take
    their template step's level when no other step reads their nodes, writes a node of theirs
    or a shared node they read, or touches their storage (else every step is leveled here)."""
    rows = row_levels(ctx, steps, layers) if layers else RowLevels()
    which: Sequence[int] = [i for i in range(len(steps)) if i not in rows.copy_of] \
        if rows.copy_of else range(len(steps))
    step_reads, ptr = _touched(ctx, steps, which)
    if rows.copy_of and not _outside(rows, steps, which, step_reads, ptr):
        rows, which = RowLevels(), range(len(steps))  # another step touches a proven layer
        step_reads, ptr = _touched(ctx, steps, which)
    out = _sweep(steps, which, step_reads, ptr)
    for i, t in rows.copy_of.items():
        out[i] = out[t]
    return out


def compact_levels(ctx: LowerContext, steps: list[Step],
                   layers: Sequence[LayerSteps]) -> list[int] | None:
    """:func:`levels` of a compact lowering (the rows' steps left out, each row's step at its
    template step's level): when :func:`~derivgraph.compiler.schedule_layers.layer_fence`
    proves the layers' storage and no step but the templates' touches a layer (else None)."""
    fence = layer_fence(ctx, steps, layers)
    if fence is None:
        return None
    which = range(len(steps))
    step_reads, ptr = _touched(ctx, steps, which)
    if not _outside(fence, steps, which, step_reads, ptr):
        return None
    return _sweep(steps, which, step_reads, ptr)


def _touched(ctx: LowerContext, steps: list[Step], which: Sequence[int],
             ) -> tuple[list[list[str]], dict[str, int | None]]:
    """What each step at ``which`` reads, and the storage address of every node they touch."""
    step_reads = [steps[i].reads() for i in which]
    ptr = _storage_addresses(ctx, [r for refs in step_reads for r in refs]
                             + [steps[i].target for i in which if steps[i].action in WRITES])
    return step_reads, ptr


def _sweep(steps: list[Step], which: Sequence[int], step_reads: list[list[str]],
           ptr: dict[str, int | None]) -> list[int]:
    """The level of each step at ``which``, in order (any other step's left 0)."""
    level_of_node: dict[str, int] = {}
    last_write: dict[int, int] = {}
    last_read: dict[int, int] = {}
    levels = [0] * len(steps)
    no_write: tuple[int, ...] = ()
    for i, step_refs in zip(which, step_reads):
        step = steps[i]
        reads = {ptr[r] for r in step_refs} - _NONE
        at = ptr[step.target] if step.action in WRITES else None
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
        levels[i] = lvl
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


_NONE = frozenset({None})


def _outside(fence: RowLevels, steps: list[Step], which: Sequence[int],
             step_reads: list[list[str]], ptr: dict[str, int | None]) -> bool:
    """Whether the steps at ``which`` other than the proven templates' own read no node of a
    proven layer, write none of its nodes or the shared nodes it reads, and touch none of
    their addresses (``ptr``: every address ``steps`` touch)."""
    shared, fenced, templates = fence.shared, fence.fenced, fence.templates
    for i, refs in zip(which, step_reads):
        if i in templates:
            continue
        nodes = fence.nodes  # made once, when a step outside the templates is read
        step = steps[i]
        if step.node in nodes or step.node in shared or step.target in nodes \
                or step.target in shared or not nodes.isdisjoint(refs):
            return False
        if step.action in WRITES and ptr[step.target] in fenced \
                or not fenced.isdisjoint(map(ptr.__getitem__, refs)):
            return False
    return True


def _storage_addresses(ctx: LowerContext, refs: list[str]) -> dict[str, int | None]:
    """The one storage address of each ref's bound tensor (:meth:`storage_ptrs`, read in one
    sweep; None: nothing bound, not a tensor, or meta; none move while scheduling)."""
    refs = list(dict.fromkeys(refs))
    out: dict[str, int | None] = {}
    for ref, value in zip(refs, ctx.bound_values(refs, None)):
        out[ref] = value.untyped_storage().data_ptr() \
            if isinstance(value, torch.Tensor) and not value.is_meta else None
    return out
