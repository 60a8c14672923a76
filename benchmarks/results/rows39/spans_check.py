"""Checks DESIGN.md's insertion-order claim on real graphs: every closed stamped row's nodes
sit in ``Graph.nodes``' insertion order as two contiguous spans (its derived tensors, then
what its replay made), at the template's offsets, so a row record can keep its place by two
span starts. Prints, per workload, the closed rows and how many break the claim.

    PYTHONPATH=TREE python3 spans_check.py
"""

from typing import Any

from derivgraph.compiler.layers import closed_layers
from derivgraph.compiler.stamp import stamping
from derivgraph.planner import compile_plan
from derivgraph.tools.bench import _workload
from derivgraph.tools.bench_scaling import scaling_model, scaling_spec
from tests.compiler.test_order_blocks import chain_specs


def _shape(where: dict[str, int], ids: tuple[str, ...], lead: int) -> tuple[Any, ...] | None:
    """(offsets of the derived tensors from the first, offsets of the rest from their first)
    when each part is one contiguous span; None otherwise."""
    head, tail = [where[n] for n in ids[:lead]], [where[n] for n in ids[lead:]]
    parts = []
    for part in (head, tail):
        if part and sorted(part) != list(range(min(part), min(part) + len(part))):
            return None
        parts.append(tuple(p - min(part) for p in part) if part else ())
    return tuple(parts)


def check(name: str, plan: Any) -> None:
    graph = plan.graph
    where = {n: i for i, n in enumerate(graph.nodes)}
    rows = broken = 0
    for table in closed_layers(graph):
        lead = next((i for i, n in enumerate(table.template) if n not in graph.derived),
                    len(table.template))
        want = _shape(where, table.template, lead)
        for row in table.rows:
            rows += 1
            broken += want is None or _shape(where, row, lead) != want
    print(f"{name:24s} closed rows {rows:6d}  not two spans at the template's offsets "  # noqa: T201
          f"{broken}")


with stamping(True):
    check("scaling 100k", compile_plan(scaling_model(25000), [scaling_spec()]))
    check("chain + reader", compile_plan(scaling_model(50), chain_specs()))
    for workload in ("reference", "deepseek"):
        model, specs, *_ = _workload("cpu", workload, 61, None)
        check(workload, compile_plan(model, specs))
