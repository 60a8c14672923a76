"""The group keys' meta check (``schedule_layers.same_key_facts``) on a proven layer: the layer
proof found every row's meta values to be the template's in the plan's meta env, so a layer
the lowering made (``LayerSteps.metas``: that env) is not swept again; in any other env (a
re-inference replaces it) the rows' meta values are swept as before. Canaries: the sweep
skipped whatever the env (a row whose meta value differs keeps the template's key), and never
skipped.
"""

from __future__ import annotations

from typing import Any

import torch

from derivgraph import compile_plan
from derivgraph.compiler.lower import Action, LayerSteps, lower_steps
from derivgraph.compiler.schedule_layers import same_key_facts
from derivgraph.compiler.stamp import stamping
from derivgraph.tools.bench_scaling import scaling_model, scaling_spec

LAYERS = 6


class _Counting(dict):  # type: ignore[type-arg]
    """A meta env that counts its ``get`` calls."""

    gets = 0

    def get(self, key: Any, default: Any = None) -> Any:
        _Counting.gets += 1
        return super().get(key, default)


def _layer(env: dict[str, Any] | None = None) -> tuple[Any, LayerSteps]:
    """A compiled scaling plan (stamped) with ``env`` as its meta env, and the one layer its
    lowering proves."""
    with stamping(True):
        plan = compile_plan(scaling_model(LAYERS), [scaling_spec()])
    if env is not None:
        env.update(plan.meta_env)
        plan.meta_env = env
    (layer,) = lower_steps(plan.tensors).layers
    return plan, layer


def _answers(plan: Any, layer: LayerSteps) -> list[tuple[str, bool]]:
    n = len(layer.table.rows)
    return [(step.target, same_key_facts(plan.tensors, layer, step, n))
            for step in layer.steps if step.action is Action.OUT]


def test_a_proven_layer_is_not_swept_again() -> None:
    env = _Counting()
    plan, layer = _layer(env)
    assert layer.metas is plan.tensors.meta_env is env
    _Counting.gets = 0
    assert _answers(plan, layer) == [("layers.0.inv", True), ("layers.0.prod", True)]
    assert _Counting.gets == 0


def test_in_another_env_the_rows_are_swept() -> None:
    plan, layer = _layer()
    assert _answers(plan, layer) == [("layers.0.inv", True), ("layers.0.prod", True)]
    env = dict(plan.meta_env)  # a re-inference's: layer 3's weight another meta value
    env["layers.3.weight"] = torch.empty_like(env["layers.3.weight"])
    plan.meta_env = env
    assert _answers(plan, layer) == [("layers.0.inv", True), ("layers.0.prod", False)]
