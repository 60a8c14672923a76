"""Copy-shaped steps of one level, found so that codegen writes them in one ``_foreach_copy_``.

Two exact rewrites, applied to the steps of a grouped pass before scheduling and emission:

* :func:`stage_directly`: a reduction that is the identity on one element (``amax`` of a
  one-element tensor is that element, bit for bit: signed zeros and NaN included) whose only
  readers are the staging steps of derived Python scalars of its dtype: the stages copy the
  reduction's input (into the stage viewed in the input's shape, one element either way) and
  the reduction is not run (no temporary).
* :func:`row_copies`: a ``cat`` along dim 0 written ``out=`` derived storage, of inputs of the
  storage's dtype and trailing shape: the same bytes as one copy per input into consecutive
  rows of the storage (no type promotion: every input already has the storage's dtype).

:func:`derivgraph.compiler.codegen.build_program` then writes the plain copies, the stages and
the row copies of one level as one ``torch._foreach_copy_`` (one dispatch instead of one per
kind; after a reload the first call of each kind runs cold).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import replace
from typing import NamedTuple

from derivgraph.compiler.graph import NodeRef
from derivgraph.compiler.lower import Action, LowerContext, Step, out_tensor

__all__ = ["IDENTITY_ON_ONE", "Rows", "has_identity_reductions", "row_copies", "stage_directly"]

#: reductions whose value on a one-element tensor is that element, bit for bit
IDENTITY_ON_ONE = frozenset({"amax"})


class Rows(NamedTuple):
    """One input of a dim-0 ``cat``: rows ``[start, stop)`` of the target's storage."""

    start: int
    stop: int
    input: str


def _identity_input(ctx: LowerContext, step: Step) -> str | None:
    """The input of ``step`` when it is a reduction that is the identity on its one element."""
    if step.action is not Action.COMPUTE or step.op not in IDENTITY_ON_ONE or step.kwargs \
            or len(step.args) != 1 or not isinstance(step.args[0], NodeRef):
        return None
    meta = ctx.meta_of(step.args[0])
    return step.args[0].id if meta is not None and meta.numel() == 1 else None


def has_identity_reductions(ctx: LowerContext, steps: list[Step]) -> bool:
    """Whether a step of ``steps`` is a reduction :func:`stage_directly` may drop."""
    return any(_identity_input(ctx, s) is not None for s in steps)


def stage_directly(ctx: LowerContext, steps: list[Step]) -> tuple[list[Step], dict[str, str]]:
    """``steps`` with each identity reduction read only by stages of its input's dtype dropped
    and its stages reading that input; and the dropped node -> its input."""
    candidates = {s.node: src for s in steps if (src := _identity_input(ctx, s)) is not None}
    if not candidates:  # the common case: no step reads are counted
        return steps, {}
    readers = Counter(ref for s in steps for ref in s.reads() if ref in candidates)
    staged: Counter[str] = Counter()
    for s in steps:
        if s.action is Action.SCALAR and s.input in candidates:
            meta, stage = ctx.meta_of(candidates[s.input]), ctx.stage(s.target)
            if stage.numel() == 1 and meta.dtype == stage.dtype:
                staged[s.input] += 1
    direct = {node: candidates[node] for node, n in staged.items() if n == readers[node]}
    if not direct:
        return steps, {}
    out = [replace(s, input=direct[s.input]) if s.action is Action.SCALAR and s.input in direct
           else s for s in steps if s.node not in direct or s.action is not Action.COMPUTE]
    return out, direct


def row_copies(ctx: LowerContext, step: Step) -> list[Rows] | None:
    """The row copies that make a dim-0 ``cat`` step (see the module docstring), or None."""
    if step.action is not Action.OUT or step.op != "cat" or step.kwargs \
            or step.out_shape is not None or step.scale is not None or not step.args:
        return None
    inputs, dim = step.args[0], step.args[1] if len(step.args) > 1 else 0
    out = out_tensor(ctx, step)
    if len(step.args) > 2 or not isinstance(inputs, list) or not inputs or out.dim() == 0 \
            or dim not in (0, -out.dim()):
        return None
    rows, start = [], 0
    for ref in inputs:
        meta = ctx.meta_of(ref) if isinstance(ref, NodeRef) else None
        if meta is None or meta.dtype != out.dtype or meta.dim() != out.dim() \
                or meta.shape[1:] != out.shape[1:]:
            return None
        rows.append(Rows(start, start + meta.shape[0], ref.id))
        start += meta.shape[0]
    return rows if start == out.shape[0] else None
