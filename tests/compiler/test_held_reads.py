"""Reads of held nodes that leave them held (:class:`~derivgraph.compiler.ir.HeldNode`): a
column's op, when the column knows it (:meth:`HeldColumn.nodes
<derivgraph.compiler.ir.HeldColumn.nodes>`' ``op``), and a node's ``(args, kwargs)`` through
:func:`~derivgraph.compiler.ir.calls_of` (the lowering's expanded layer steps) are read from the
column without making the node, equal to what the made node holds. The deepseek compile (its
layers take the expanded steps) makes no held node. Canaries (planted once each, see the
helper's NOTES): the lowering reading ``args``/``kwargs`` of the nodes; a column's op given for
the wrong field."""

from __future__ import annotations

from typing import Any

import pytest

from derivgraph.compiler import ir
from derivgraph.compiler.graph import NodeRef
from derivgraph.compiler.ir import HeldColumn, HeldLeaves, HeldNode, Node, NodeKind, calls_of
from derivgraph.planner import compile_plan
from derivgraph.tools.deepseek_workload import DeepseekModel, deepseek_specs

_OP, _DERIVED = NodeKind.OP, NodeKind.DERIVED


def _fields(row: int) -> tuple[Any, ...]:
    return (_OP, "mul", (NodeRef(f"x{row}"), 2.0), {"k": row}, (f"x{row}",), (), (), None, None)


def _eager(row: int) -> Node:
    return Node(f"%{row}:mul", *_fields(row))


def test_calls_of_held_nodes_equal_the_made_ones_and_leave_them_held() -> None:
    ids = [f"%{r}:mul" for r in range(3)]
    held = HeldColumn(ids, _fields).nodes(_OP)
    plain = _eager(7)
    got = calls_of([held[2], plain, held[0]])
    assert got == [(_eager(2).args, _eager(2).kwargs), (plain.args, plain.kwargs),
                   (_eager(0).args, _eager(0).kwargs)]
    assert got[1][0] is plain.args and got[1][1] is plain.kwargs  # a node's own fields
    assert all(isinstance(n, HeldNode) for n in held)  # none made
    held[1].kwargs["k"] = 9  # made, then changed: read from the node from now on
    assert type(held[1]) is Node
    assert calls_of([held[1]]) == [(_eager(1).args, {"k": 9})]


@pytest.mark.parametrize("op", ["mul", None])
def test_a_columns_op_is_read_without_making_its_nodes(op: str | None) -> None:
    ids = [f"%{r}:mul" for r in range(3)]
    if op is None:
        held = HeldLeaves(ids, _DERIVED).nodes(_DERIVED)
        eager = [Node(i, _DERIVED) for i in ids]
    else:
        held = HeldColumn(ids, _fields).nodes(_OP, op)
        eager = [_eager(r) for r in range(3)]
    assert [n.op for n in held] == [n.op for n in eager] == [op] * 3
    assert all(isinstance(n, HeldNode) for n in held)  # none made
    held[1].op = "add"  # a write makes it first
    eager[1].op = "add"
    assert type(held[1]) is Node and held[1].__dict__ == eager[1].__dict__
    assert held[0].inputs == eager[0].inputs and held[0].__dict__ == eager[0].__dict__


def test_deepseek_compile_makes_no_held_node(monkeypatch: pytest.MonkeyPatch) -> None:
    """Deepseek's stamped layers share groups and take the expanded steps
    (:meth:`LayerSteps.columns <derivgraph.compiler.lower.LayerSteps.columns>`), which read
    each row's op call: from the column, so no held node is made by the compile."""
    made: list[str] = []
    make = ir.HeldNode.made

    def counted(node: ir.HeldNode) -> Node:
        made.append(node.id)
        return make(node)

    monkeypatch.setattr(ir.HeldNode, "made", counted)
    model = DeepseekModel(scale=1 / 256, layers=16, experts=8)
    model.reload(0)
    model.post_load()
    plan = compile_plan(model, deepseek_specs())
    held = sum(isinstance(n, HeldNode) for n in plan.graph.ir.nodes.values())
    assert held > 0 and made == []
