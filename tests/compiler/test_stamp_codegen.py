"""Code generation decides a group key once per template step (:attr:`Step.twin`).

A step of a provable stamped layer carries its template's step; the grouping of the pass
takes that step's key for it. The property this relies on: every such step's own key equals
its template step's (checked on the scaling workload and the heterogeneous stack, whose
stamped plans the oracle of :mod:`tests.compiler.test_stamp` already compares with the plain
ones). Canary: a twin planted on a layer of another dtype groups it with the template's
layers, and the printed pass changes.
"""

from __future__ import annotations

from typing import Any

import torch

from derivgraph import compile_plan
from derivgraph.compiler.codegen import _group_key
from derivgraph.tools.bench_scaling import scaling_model, scaling_spec
from tests.compiler.test_stamp import HETEROGENEOUS, _layer_spec, _loaded


def _plans() -> list[Any]:
    return [compile_plan(scaling_model(20), [scaling_spec()]),
            compile_plan(_loaded(HETEROGENEOUS), [_layer_spec()])]


def test_every_twin_step_has_its_template_steps_group_key() -> None:
    for plan in _plans():
        twins = [s for s in plan.steps if s.twin is not None]
        assert twins  # the shortcut is taken
        assert all(_group_key(plan.tensors, s) == _group_key(plan.tensors, s.twin)
                   for s in twins)


def test_canary_a_twin_of_another_dtype_is_grouped_wrong() -> None:
    """Planted bug: layer 4 (float16) takes layer 0's step (float32) as its twin."""
    plan = compile_plan(_loaded(HETEROGENEOUS), [_layer_spec()])
    by_target = {s.target: s for s in plan.steps}
    step, template = by_target["layers.4.inv"], by_target["layers.0.inv"]
    assert step.twin is None and plan.entries["layers.4.inv"].storage.dtype == torch.float16
    assert _group_key(plan.tensors, step) != _group_key(plan.tensors, template)
    before = plan.source()
    step.twin = template
    plan.install(plan.steps)
    assert plan.source() != before
