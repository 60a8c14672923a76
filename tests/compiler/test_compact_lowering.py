"""A compact lowering (:attr:`derivgraph.compiler.lower.LoweredSteps.compact`): the proven
stamped rows' steps are left out of the list and code generation takes each as a column of
its template step (:func:`derivgraph.compiler.codegen._column_plan`); the printed pass, the
steps read back (:attr:`Plan.steps`), the written targets and the step count are the ones a
full lowering (every row's step made) gives, and the values are bit for bit eager's."""

from __future__ import annotations

import pytest
import torch

from derivgraph.compiler import codegen, lower
from derivgraph.compiler.graph import NodeRef
from derivgraph.compiler.ir import NodeKind
from derivgraph.compiler.lower import WRITES, Action, LoweredSteps, Step, lower_steps
from derivgraph.compiler.schedule import compact_levels
from tests.compiler.test_schedule_layers import LAYERS, _plan  # the stamped scaling plan


def _full_source(plan) -> str:  # noqa: ANN001
    """The printed pass of the full lowering (every row's step made and keyed on its own)."""
    plan.install(list(plan.steps))
    return plan.source()


def test_the_rows_are_left_out_and_read_back_whole(monkeypatch) -> None:  # noqa: ANN001
    plan = _plan()
    lowered = plan.programs.lowered
    assert isinstance(lowered, LoweredSteps) and lowered.compact
    assert len(lowered) == 2  # the template's inv and prod; the rows' are columns
    count, written = plan.programs.step_count(), plan.programs.written()  # rows not made
    assert lowered._full is None
    full = plan.steps
    assert [s.node for s in full] == [f"layers.{i}.{n}" for i in range(LAYERS)
                                      for n in ("inv", "prod")]
    monkeypatch.setattr(lower, "_step_order", lambda order, chosen, layers, chunks=(): None)
    made = lower_steps(plan.tensors)  # every row's step made by the lowering itself
    assert not made.compact and made == full
    assert count == len(full) == 2 * LAYERS
    assert written == [s.target for s in full if s.action in WRITES]


def test_the_printed_pass_is_the_full_lowerings() -> None:
    plan = _plan()
    compact = plan.source()
    assert "group = [layers.0.inv, layers.1.inv" in compact
    assert _full_source(plan) == compact


def test_the_values_after_a_reload_are_eagers_bit_for_bit() -> None:
    plan = _plan()
    with torch.no_grad():
        for i, layer in enumerate(plan.model.layers):
            layer.scale.copy_(torch.linspace(1.0, 2.0, layer.scale.numel()) + i)
    plan.run()
    want = plan.evaluate()
    for node_id, entry in plan.entries.items():
        got, ref = entry.storage, want[node_id]
        if isinstance(got, torch.Tensor):
            assert torch.equal(got.view(torch.int32) if got.dtype == torch.float32 else got,
                               ref.view(torch.int32) if ref.dtype == torch.float32 else ref), \
                node_id


def test_a_column_sharing_its_group_takes_the_full_lowering(monkeypatch) -> None:  # noqa: ANN001
    plan = _plan()
    lowered = plan.programs.lowered
    assert codegen._column_plan(plan.tensors, lowered) is not None
    # every step keyed alike: the template's two columns would share one group per level
    key = codegen.GroupKey(codegen.GroupKind.UNARY, "reciprocal", torch.float32,
                           torch.device("cpu"))
    monkeypatch.setattr(codegen, "_group_key", lambda ctx, step: key)
    monkeypatch.setattr(codegen, "same_key_facts", lambda *args: True)
    assert codegen._column_plan(plan.tensors, lowered) is None


def test_a_row_out_of_order_is_not_compact(monkeypatch) -> None:  # noqa: ANN001
    plan = _plan()
    order = list(plan.graph.ordered())
    a, b = order.index("layers.3.inv"), order.index("layers.4.inv")
    order[a], order[b] = order[b], order[a]  # layer 4's inv before layer 3's
    monkeypatch.setattr(type(plan.graph), "ordered", lambda self: order)
    steps = lower_steps(plan.tensors)
    assert not steps.compact
    assert [s.node for s in steps].index("layers.4.inv") < \
        [s.node for s in steps].index("layers.3.inv")


def test_a_column_alike_is_named_by_its_first_node_only() -> None:
    plan = _plan()
    column = [f"layers.{i}.scale" for i in range(LAYERS)]
    em = codegen.Emitter(plan.tensors, codegen.Bindings())
    assert em.list_members(column, alike=True) == tuple(map(codegen.Bound, column))
    assert not em.bindings.names  # sources: the list names them, no global of their own
    # a first node the list does not name (an op) is named one by one, as without `alike`
    with pytest.raises(KeyError):
        em.list_members(["%1:div", *column], alike=True)


def test_a_step_outside_reading_a_rows_node_turns_the_columns_off() -> None:
    plan = _plan()
    lowered = plan.programs.lowered
    table = lowered.layers[0].table
    k = next(k for k, t in enumerate(table.template) if plan.graph.nodes[t].kind is NodeKind.OP)
    assert compact_levels(plan.tensors, lowered, lowered.layers) == [0, 0]
    # an op of row 2 (no storage: only the node check sees it) read by a step outside
    extra = Step("extra", Action.COMPUTE, "neg", (NodeRef(table.rows[1][k]),))
    mixed = LoweredSteps([extra, *lowered], lowered.layers)
    assert compact_levels(plan.tensors, mixed, mixed.layers) is None


def test_the_step_order_holds_steps_outside_the_layers() -> None:
    plan = _plan()
    lowered = plan.programs.lowered
    order = plan.graph.ordered()
    chosen = {s.node: s for s in lowered}
    extra = Step("layers.0.strides", Action.COPY, input="layers.0.scale",
                 target="layers.0.strides")  # a step of a node outside the layer's steps
    got = lower._step_order(order, {**chosen, extra.node: extra}, lowered.layers)
    assert got is not None and "layers.0.strides" in got
    assert [n for n in got if n != "layers.0.strides"] == [s.node for s in plan.steps]
    swapped = list(order)
    a, b = swapped.index("layers.3.prod"), swapped.index("layers.4.prod")
    swapped[a], swapped[b] = swapped[b], swapped[a]
    assert lower._step_order(swapped, {**chosen, extra.node: extra}, lowered.layers) is None


def test_written_leaves_out_a_step_that_writes_no_node() -> None:
    plan = _plan()
    lowered = plan.programs.lowered
    extra = Step("%x", Action.COMPUTE, "neg", (NodeRef("layers.0.scale"),))
    mixed = LoweredSteps([extra, *lowered], lowered.layers, ["%x", *lowered._order])
    assert mixed.written() == lowered.written() == [s.target for s in plan.steps]
    assert mixed.count() == lowered.count() + 1 == len(mixed.expanded())


def test_a_partial_pass_makes_only_its_rows_steps() -> None:
    plan = _plan()
    lowered = plan.programs.lowered
    nodes = plan.programs.needed(("layers.3.scale",), plan.tensors.sources)
    got = lowered.select(nodes)
    assert lowered._full is None  # the rows' steps were not all made
    assert [s.node for s in got] == ["layers.3.inv", "layers.3.prod"]
    assert got == [s for s in plan.steps if s.node in nodes or s.target in nodes]
    assert lowered.select(nodes | {"layers.1.inv"}) == \
        [s for s in plan.steps if s.node in nodes | {"layers.1.inv"}]
