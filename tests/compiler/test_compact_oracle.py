"""The compact lowering's emission (:func:`derivgraph.compiler.codegen._column_plan`'s levels,
a column a group) against the full lowering's (:func:`~derivgraph.compiler.codegen.
build_program` over every row's step, both emitted by ``codegen._emit_levels``):
on the bench workloads and the scaling model's variants, the printed pass of a plan (exactly
what runs) is the same text either way. The compact driver groups a level as the full one
does; this is the oracle that keeps the two drivers equal beyond the scaling model of
``test_compact_lowering`` (which checks the values bit for bit)."""

from __future__ import annotations

from typing import Any

import pytest
import torch

from derivgraph import compile_plan
from derivgraph.compiler import codegen
from derivgraph.tools.bench import _workload
from derivgraph.tools.bench_scaling import scaling_spec
from tests.compiler.test_stamp_reload import _model

_CASES = ["reference", "deepseek", "scaling", "scaling-float64-layer", "scaling-narrow-layer"]
_PLANTS = {"scaling": None, "scaling-float64-layer": {"dtype": torch.float64},
           "scaling-narrow-layer": {"n": 6}}
# the workloads whose every proven layer lowers compactly, and those whose pass the compact
# driver then emits (the others fall back to every row's step): the oracle is not vacuous
_COMPACT = {"deepseek", "scaling", "scaling-float64-layer", "scaling-narrow-layer"}
_EMITTED = {"scaling", "scaling-float64-layer"}


def _plan(case: str) -> Any:
    if case in _PLANTS:
        return compile_plan(_model(_PLANTS[case]), [scaling_spec()])
    model, specs, *_ = _workload("cpu", case, 4, None)
    return compile_plan(model, specs)


@pytest.mark.parametrize("case", _CASES)
def test_the_compact_pass_prints_as_the_full_one(case: str,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    plan = _plan(case)
    lowered = plan.programs.lowered
    assert lowered.compact == (case in _COMPACT)
    planned: list[Any] = []
    real = codegen._column_plan
    monkeypatch.setattr(codegen, "_column_plan",
                        lambda *a: planned.append(real(*a)) or planned[-1])
    plan.install(lowered)  # as the compile installed it
    # the columns were emitted where they apply
    assert any(p is not None for p in planned) == (case in _EMITTED)
    compact = plan.source()
    plan.install(list(plan.steps))  # every row's step, keyed and grouped one by one
    assert plan.source() == compact


def test_canary_a_column_listed_out_of_order_is_caught(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Planted bug: the compact driver lists a column's rows in reverse (template first); the
    printed pass then differs from the full lowering's: red."""
    plan = _plan("scaling")
    real = codegen._column_members

    def planted(ctx: Any, step: Any, layer: Any, *rest: Any) -> Any:
        m = real(ctx, step, layer, *rest)
        flip = [0, *range(len(m.targets) - 1, 0, -1)]
        return codegen.Members(*([c[i] for i in flip] if c else c
                                 for c in (m.targets, m.outs, m.a, m.b)), m.alike)

    monkeypatch.setattr(codegen, "_column_members", planted)
    plan.install(plan.programs.lowered)
    compact = plan.source()
    plan.install(list(plan.steps))
    assert plan.source() != compact
