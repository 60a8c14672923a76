"""Shape inference over stamped rows: the budgets read off the totals, and the rows' meta
values and devices taken from their templates, checked against the plain compile."""

from __future__ import annotations

from typing import Any

import pytest

from derivgraph import DerivedTensor, Spec, Target, compile_plan
from derivgraph.compiler import infer, stamp
from derivgraph.errors import SpecValidationError
from derivgraph.limits import LIMITS
from derivgraph.tools.bench_scaling import scaling_model, scaling_spec


def _two_specs() -> list[Spec]:
    """Two specs of one file (``<python>``), 32 bytes a layer each: ``inv_a`` on every layer
    (its template layer 0), ``inv_b`` on the layers tagged 1 (its template layer 1), so at
    layers 1-4 their bytes add up to 64 at one (file, module)."""
    def one(name: str, formula: str, where: dict[str, Any]) -> Spec:
        return Spec(name=name, target=Target(module_class=["ScalingLayer"], where=where),
                    derived=[DerivedTensor(name=name, kind="attribute", formula=formula)])

    # apart sources: a source or op another spec reads too would open the rows
    return [one("inv_a", "1.0 / scale", {}), one("inv_b", "2.0 * weight", {"tag": 1})]


def _model() -> Any:
    model = scaling_model(5)
    for i, layer in enumerate(model.layers):
        layer.tag = min(i, 1)
    return model


def _issues(on: bool, specs: list[Spec], limit: int,
            monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, str, str]]:
    monkeypatch.setattr(LIMITS, "max_file_alloc_bytes", limit)
    with stamp.stamping(on), pytest.raises(SpecValidationError) as raised:
        compile_plan(_model(), specs)
    return [(i.rule, i.message, i.node) for i in raised.value.issues]


def test_a_file_budget_crossed_by_each_stamped_layer_is_reported_as_without_stamping(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Each layer's spec file holds 128 bytes at its module (inv, prod 32, strides 64); the
    per-file budget is 100: every layer crosses it, as the plain compile reports."""
    plain = _issues(False, [scaling_spec()], 100, monkeypatch)
    assert [node for _, _, node in plain] == [f"layers.{i}.strides" for i in range(5)]
    assert _issues(True, [scaling_spec()], 100, monkeypatch) == plain


def test_a_file_budget_crossed_only_by_two_specs_together_is_reported(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Two stamped specs of one file on each layer, 32 bytes each, a budget of 50: only their
    sum at one (file, module) crosses it, so the totals cannot be read per table."""
    plain = _issues(False, _two_specs(), 50, monkeypatch)
    assert [node for _, _, node in plain] == [f"layers.{i}.inv_b" for i in range(1, 5)]
    assert _issues(True, _two_specs(), 50, monkeypatch) == plain


def _compiles(specs: list[Spec], limit: str, value: int,
              monkeypatch: pytest.MonkeyPatch) -> Any:
    monkeypatch.setattr(LIMITS, limit, value)
    with stamp.stamping(True):
        return compile_plan(_model(), specs)  # no SpecValidationError: the bug shows


def test_canary_the_totals_without_the_rows_bytes_miss_the_crossing(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Planted bug: the shortcut sums only the bytes outside the stamped rows, so the model's
    budget (300; 128 a layer), crossed only with the rows' bytes, goes unreported."""
    def planted(per_file: dict[tuple[str, str], int], spread: Any) -> bool:
        return sum(per_file.values()) <= LIMITS.max_model_alloc_bytes

    monkeypatch.setattr(infer, "_spread_within", planted)
    plan = _compiles([scaling_spec()], "max_model_alloc_bytes", 300, monkeypatch)
    assert plan.graph.stamped == 4


def test_canary_the_totals_with_a_repeated_key_miss_the_sum(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Planted bug: the shortcut reads the totals even where a (file, module) repeats, so two
    specs' bytes that cross the budget only together go unreported."""
    def planted(per_file: dict[tuple[str, str], int],
                spread: list[tuple[str, int, list[str]]]) -> bool:
        limit = LIMITS.max_file_alloc_bytes
        return all(v <= limit for v in per_file.values()) and \
            all(n <= limit for _, n, _ in spread)

    monkeypatch.setattr(infer, "_spread_within", planted)
    plan = _compiles(_two_specs(), "max_file_alloc_bytes", 50, monkeypatch)
    assert plan.graph.stamped == 7


@pytest.mark.parametrize("size", [1, 5])
def test_stamped_rows_take_the_plain_meta_values_and_devices(size: int) -> None:
    """Every derived tensor's meta value (shape, stride, dtype) and device, and every node's
    in the meta env, are the plain compile's."""
    def metas(on: bool) -> tuple[list[Any], list[Any]]:
        with stamp.stamping(on):
            graph = compile_plan(scaling_model(size), [scaling_spec()]).graph
        def show(v: Any) -> Any:
            return (tuple(v.shape), v.stride(), v.dtype, v.device) if v is not None else None
        return ([(n, show(d.meta), d.device) for n, d in graph.derived.items()],
                [(n, show(graph.meta_env.get(n))) for n in graph.nodes])

    assert metas(True) == metas(False)
