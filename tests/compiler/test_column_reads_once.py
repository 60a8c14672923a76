"""A compact lowering's written columns read once (:func:`derivgraph.compiler.codegen.
_column_members`): the rows' written values are those :func:`~derivgraph.compiler.
schedule_layers.same_key_facts` read for the group key, not read again for the emission. The
emitted pass (source and every bound global, object by object) equals the one the emission
reading each column again emits, with the flat path and without it; the reads are counted."""

from __future__ import annotations

from typing import Any

import pytest

from derivgraph import compile_plan
from derivgraph.compiler import codegen
from derivgraph.runtime.storage import BoundTensors
from derivgraph.tools.bench_scaling import scaling_model, scaling_spec
from tests.compiler.test_compact_oracle import _plan as _oracle_plan


def _plan(case: str) -> Any:
    if case == "scaling-40":  # columns of 40 rows: the flat groups' size (flat.MIN_GROUP)
        return compile_plan(scaling_model(40), [scaling_spec()])
    return _oracle_plan(case)


def _emitted(plan: Any) -> tuple[str, dict[str, Any]]:
    plan.install(plan.programs.lowered)
    return plan.source(), dict(plan.programs.bindings.globals)


def _same_globals(mine: dict[str, Any], theirs: dict[str, Any]) -> bool:
    if mine.keys() != theirs.keys():
        return False
    for name, value in mine.items():
        other = theirs[name]
        if isinstance(value, list):
            if len(value) != len(other) or any(a is not b for a, b in zip(value, other)):
                return False
        elif type(value) is not type(other):
            return False
    return True


def _read_again(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every written column read again by the emission (no rows' values handed on)."""
    real = codegen._column_members
    monkeypatch.setattr(codegen, "_column_members",
                        lambda ctx, step, layer, written=None: real(ctx, step, layer))


@pytest.mark.parametrize("flat", [True, False])
@pytest.mark.parametrize("case", ["scaling", "scaling-float64-layer", "scaling-40"])
def test_columns_read_once_emit_what_columns_read_again_emit(
        case: str, flat: bool, monkeypatch: pytest.MonkeyPatch) -> None:
    plan = _plan(case)
    plan.programs.flat = flat
    planned: list[Any] = []
    real = codegen._column_plan
    monkeypatch.setattr(codegen, "_column_plan",
                        lambda *a: planned.append(real(*a)) or planned[-1])
    source, bound = _emitted(plan)
    assert planned and planned[-1] is not None and planned[-1][2]  # the columns were shared
    assert ("index_select" in source) == (flat and case == "scaling-40")  # the flat groups
    with monkeypatch.context() as m:
        _read_again(m)
        again_source, again = _emitted(plan)
    assert source == again_source
    assert _same_globals(bound, again)


def _reads(plan: Any, monkeypatch: pytest.MonkeyPatch) -> int:
    """How many refs ``bound_values`` looks up while the plan's pass is installed."""
    count = [0]
    real = BoundTensors.bound_values

    def spy(self: Any, refs: Any, missing: Any = None) -> list[Any]:
        refs = list(refs)
        count[0] += len(refs)
        return real(self, refs, missing)

    with monkeypatch.context() as m:
        m.setattr(BoundTensors, "bound_values", spy)
        plan.install(plan.programs.lowered)
    return count[0]


def test_each_column_is_read_once(monkeypatch: pytest.MonkeyPatch) -> None:
    plan = _plan("scaling")
    rows = len(plan.programs.lowered.layers[0].table.rows)
    shared = _reads(plan, monkeypatch)
    with monkeypatch.context() as m:
        _read_again(m)
        again = _reads(plan, monkeypatch)
    # scaling's two written columns (``inv = 1 / scale``, ``prod = scale * weight``): their
    # rows' outputs read once (by the group key's facts), not twice
    assert again - shared == 2 * rows
