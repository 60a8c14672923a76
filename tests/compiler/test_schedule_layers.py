"""A proven stamped row takes its template's levels and group keys
(:mod:`derivgraph.compiler.schedule_layers`); a row that differs (storage shared with another
layer, another dtype written, another step order) or a step outside the layer that touches
it is scheduled step by step, and the schedule is the one computed without the shortcut."""

from __future__ import annotations

import torch

from derivgraph import compile_plan
from derivgraph.compiler.codegen import _group_key
from derivgraph.compiler.lower import Action, LoweredSteps, Step
from derivgraph.compiler.schedule import levels
from derivgraph.compiler.schedule_layers import row_keys, row_levels
from derivgraph.compiler.stamp import stamping
from derivgraph.tools.bench_scaling import scaling_model, scaling_spec

LAYERS = 6


def _plan():  # noqa: ANN202 - a Plan
    with stamping(True):
        plan = compile_plan(scaling_model(LAYERS), [scaling_spec()])
    assert plan.graph.stamped == LAYERS - 1
    return plan


def _plain_keys(plan, steps: list[Step]) -> list:  # noqa: ANN001
    return [_group_key(plan.tensors, s) for s in steps]


def test_every_row_takes_its_templates_schedule() -> None:
    plan = _plan()
    steps = plan.steps
    assert isinstance(steps, LoweredSteps) and len(steps.layers) == 1
    rows = row_levels(plan.tensors, steps, steps.layers)
    # two steps a layer (inv, prod; the constant and the alias have none); layer 0: template
    assert len(steps) == 2 * LAYERS and len(rows.copy_of) == 2 * (LAYERS - 1)
    assert set(rows.copy_of.values()) == {0, 1}
    assert levels(plan.tensors, steps, steps.layers) == levels(plan.tensors, list(steps)) \
        == [0] * len(steps)
    keys = row_keys(plan.tensors, steps, steps.layers, _group_key)
    assert keys == _plain_keys(plan, steps)
    assert [k.op for k in keys] == ["reciprocal", "mul"] * LAYERS


def test_a_row_sharing_another_rows_storage_is_leveled_on_its_own() -> None:
    plan = _plan()
    steps = plan.steps
    # layer 3's `inv` now writes layer 2's: a write after a write, one level later
    plan.entries["layers.3.inv"].storage = plan.entries["layers.2.inv"].storage
    rows = row_levels(plan.tensors, steps, steps.layers)
    assert rows.copy_of == {}  # the table's addresses are not all distinct
    got = levels(plan.tensors, steps, steps.layers)
    assert got == levels(plan.tensors, list(steps))
    assert got[steps.index(next(s for s in steps if s.node == "layers.3.inv"))] == 1


def test_a_step_outside_the_layer_touching_its_storage_turns_the_shortcut_off() -> None:
    plan = _plan()
    steps = plan.steps
    # first in the list: writes layer 2's `prod` storage, so layer 2's `prod` comes one later
    extra = Step("extra", Action.COPY, input="layers.0.scale", target="layers.2.prod")
    mixed = LoweredSteps([extra, *steps], steps.layers)
    got = levels(plan.tensors, mixed, mixed.layers)
    assert got == levels(plan.tensors, list(mixed))
    assert got[1 + steps.index(next(s for s in steps if s.node == "layers.2.prod"))] == 1


def test_a_row_in_another_order_is_not_taken() -> None:
    plan = _plan()
    steps = list(plan.steps)
    a = steps.index(next(s for s in steps if s.node == "layers.4.inv"))
    steps[a], steps[a + 1] = steps[a + 1], steps[a]  # prod before inv: still a valid order
    assert steps[a].node == "layers.4.prod"
    assert row_levels(plan.tensors, steps, plan.steps.layers).copy_of == {}


def test_a_row_writing_another_dtype_is_keyed_on_its_own() -> None:
    plan = _plan()
    steps = plan.steps
    entry = plan.entries["layers.5.prod"]
    entry.storage = torch.empty_like(entry.storage, dtype=torch.float64)
    keys = row_keys(plan.tensors, steps, steps.layers, _group_key)
    assert keys == _plain_keys(plan, steps)
    i = steps.index(next(s for s in steps if s.node == "layers.5.prod"))
    assert keys[i] is None  # its operands are float32: not grouped with the others
    assert keys[i - 1].op == "reciprocal" and keys[i - 2].op == "mul"  # the others' still are


def test_the_printed_pass_is_the_same_without_the_shortcut() -> None:
    plan = _plan()
    source = plan.source()
    plan.install(list(plan.steps))  # a plain list: every step scheduled and keyed on its own
    assert plan.source() == source
