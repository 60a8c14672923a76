"""Compile-time values of stamped layers' ops: one torch call per template column.

Compile evaluates every formula on the live sources once (``planner.CompileValues``): the
values it allocates from and checks the first pass against, bit for bit. For the layers stamped
from one template (its :class:`~derivgraph.compiler.instances.InstanceTable`), an op
position of the template is a *column*: the same op with the same constants in every layer,
over each layer's own tensors. :func:`evaluate_columns` evaluates such a column as one call:
each operand position's tensors stacked (one ``torch.stack``), the op applied once, the result
unbound into one value per layer. Only where that is bit for bit the per-layer call: the ops
that give the same bits on one element or a vector of them
(:data:`~derivgraph.compiler.flat.EXACT_UNARY`, :data:`~derivgraph.compiler.flat.EXACT_BINARY`,
the rule of the flat pass), on float32/float64 tensors of one shape, dtype and device in every
operand and layer, with no keyword arguments and the same constants (compared frozen, so
``-0.0`` is not ``0.0``), and a result of the inferred dtype and of each layer's shape. Any
other column, or one whose call raises, is left to the per-node evaluation (which reports the
fault by node).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from operator import attrgetter
from typing import Any

import torch

from derivgraph.compiler.flat import EXACT_BINARY, EXACT_UNARY, OP_DTYPES
from derivgraph.compiler.graph import DerivedGraph, NodeRef, freeze
from derivgraph.compiler.ir import Node, NodeKind
from derivgraph.ops import OPS

__all__ = ["MIN_COLUMN", "evaluate_columns"]

logger = logging.getLogger(__name__)

#: the fewest layers of a template evaluated as columns (below, the calls saved are few)
MIN_COLUMN = 8
_EXACT = EXACT_UNARY | EXACT_BINARY
_OP, _SOURCE = NodeKind.OP, NodeKind.SOURCE
_NUMBERS = (int, float)
_shape, _dtype, _device = attrgetter("shape"), attrgetter("dtype"), attrgetter("device")


def evaluate_columns(graph: DerivedGraph, env: dict[str, Any],
                     run_node: Callable[[Node], Any]) -> int:
    """Put the value of every op node of the stamped columns that qualify into ``env``
    (``run_node``: the per-node evaluation, used to read a source); the number of columns
    evaluated."""
    nodes, done = graph.nodes, 0
    for table in graph.stamps:
        if len(table) < MIN_COLUMN:
            continue
        for k, first_id in enumerate(table.template):
            first = nodes.get(first_id)
            if first is None or first.kind is not _OP or first.op not in _EXACT or first.kwargs:
                continue
            column = table.column(k)
            if column[0] in env:
                continue
            values = _column(graph, env, run_node, first, column)
            if values is not None:
                env.update(zip(column, values))
                done += 1
    return done


def _column(graph: DerivedGraph, env: dict[str, Any], run_node: Callable[[Node], Any],
            first: Node, column: list[str]) -> tuple[torch.Tensor, ...] | None:
    """Each layer's value of one column, or None where a check fails."""
    nodes = graph.nodes
    col = [nodes[i] for i in column]
    op, width = first.op, len(first.args)
    if any(n.kind is not _OP or n.op != op or n.kwargs or len(n.args) != width for n in col):
        return None
    layout: tuple[Any, ...] | None = None
    call: list[Any] = []
    for j, arg in enumerate(first.args):
        if type(arg) is NodeRef:
            refs = [n.args[j] for n in col]
            if any(type(r) is not NodeRef for r in refs):
                return None
            tensors = _operands(nodes, env, run_node, [r.id for r in refs])
            if tensors is None:
                return None
            shapes, dtypes, devices = (set(map(f, tensors)) for f in (_shape, _dtype, _device))
            if len(shapes) != 1 or len(dtypes) != 1 or len(devices) != 1:
                return None
            mine = (*shapes, *dtypes, *devices)
            if mine[1] not in OP_DTYPES or layout not in (None, mine):
                return None
            layout = mine
            call.append(torch.stack(tensors))
        else:
            if type(arg) not in _NUMBERS:
                return None
            frozen = freeze(arg)  # the template's own constant object passes at once
            if any(a is not arg and (type(a) is not type(arg) or freeze(a) != frozen)
                   for a in [n.args[j] for n in col]):
                return None
            call.append(arg)
    if layout is None:
        return None
    try:
        out = OPS[op].fn(*call)
    except (RuntimeError, TypeError, ValueError) as exc:  # the per-node pass reports it by node
        logger.debug("column %s (%d layers) left to per-node evaluation: %s", first.id,
                     len(column), exc)
        return None
    meta = graph.meta_env.get(column[0])
    shape, dtype, _ = layout
    if not isinstance(out, torch.Tensor) or out.shape != (len(column), *shape) \
            or not isinstance(meta, torch.Tensor) or out.dtype != meta.dtype \
            or tuple(meta.shape) != tuple(shape):
        return None
    return out.unbind(0)


def _operands(nodes: dict[str, Node], env: dict[str, Any], run_node: Callable[[Node], Any],
              refs: list[str]) -> list[torch.Tensor] | None:
    """The values at ``refs`` (a source not read yet is read now), or None when one is not
    evaluated yet or is not a tensor."""
    out = []
    for ref in refs:
        value = env.get(ref)
        if value is None:
            node = nodes[ref]
            if node.kind is not _SOURCE:
                return None
            value = env[ref] = run_node(node)
        if not isinstance(value, torch.Tensor):
            return None
        out.append(value)
    return out

