"""The refill's layout check answered by one C++ guard (TorchDynamo's ``TensorGuards``), built
from the last fresh tensors the sweeps accepted: it refuses every layout the sweeps refuse, and
a right layout costs no sweep."""

from __future__ import annotations

from typing import Any

import pytest
import torch
from torch import nn

from derivgraph import compile_plan
from derivgraph.runtime import engine
from derivgraph.runtime.engine import Layouts, RefillTable
from tests.runtime.test_refill_batched import (
    SPEC,
    _check_against_cold,
    _compiled_and_refilled,
    _stack,
)

needs_guard = pytest.mark.skipif(engine._TensorGuards is None,
                                 reason="this torch has no TensorGuards")

WRONG = {"dtype": ("inv", lambda: torch.zeros(6, dtype=torch.float64)),
         "shape": ("inv", lambda: torch.zeros(1)), "ndim": ("inv", lambda: torch.zeros(1, 6)),
         "meta": ("inv", lambda: torch.empty(6, device="meta")),
         "transposed": ("wt", lambda: torch.zeros(6, 4))}


def _guarded(spy: list[str]) -> tuple[Any, Any, dict[str, torch.Tensor]]:
    """A plan whose refill table built its guard from one all-rebuilt refill."""
    model, plan, startup = _compiled_and_refilled(spy)
    model.load(1)
    model.post_load()
    plan.refill()
    assert plan._refill_table._layouts._guard is not None
    spy.clear()
    return model, plan, startup


def _plant(model: Any, layout: str) -> str:
    name, wrong = WRONG[layout]
    layer = model.layers[3]
    if name == "inv":
        layer._parameters["inv"] = nn.Parameter(wrong(), requires_grad=False)
    else:
        layer.wt = wrong()
    return name


@needs_guard
@pytest.mark.parametrize("layout", list(WRONG))
def test_a_built_guard_refuses_every_layout_the_sweeps_refuse(per_entry_spy, layout):
    model, plan, startup = _guarded(per_entry_spy)
    model.load(0)
    model.post_load()
    name = _plant(model, layout)
    report = plan.refill(verify=True)
    assert f"layers.3.{name}" in per_entry_spy  # the batched read declined; the reference did
    assert report.moved == [] and getattr(model.layers[3], name) is startup[f"layers.3.{name}"]
    _check_against_cold(model, startup, 0)


@needs_guard
def test_a_right_layout_is_proven_by_the_guard_alone(per_entry_spy, monkeypatch):
    model, plan, startup = _guarded(per_entry_spy)
    sweeps: list[int] = []
    swept = Layouts.swept

    def spy(self: Layouts, theirs: list[Any]) -> bool:
        sweeps.append(len(theirs))
        return swept(self, theirs)

    monkeypatch.setattr(Layouts, "swept", spy)
    for seed in (0, 1, 0):
        model.load(seed)
        model.post_load()
        assert plan.refill(verify=True).moved == []
        _check_against_cold(model, startup, seed)
    assert sweeps == [] and per_entry_spy == []


@needs_guard
def test_a_guard_failing_on_right_layouts_is_built_again_a_bounded_number_of_times(
        per_entry_spy):
    """Fresh tensors differing from the ones the guard was built from in what only the guard
    checks (``requires_grad``): the sweeps accept them and the guard is rebuilt, at most
    MAX_GUARDS times in all."""
    model, plan, startup = _guarded(per_entry_spy)
    table = plan._refill_table
    for seed in range(2 * engine.MAX_GUARDS):
        model.load(seed % 2)
        model.post_load()
        layer = model.layers[seed % 4]
        if seed % 2:
            layer.wt = layer.wt.detach().requires_grad_()
        assert plan.refill(verify=True).moved == []
        _check_against_cold(model, startup, seed % 2)
    assert table._layouts._guards == engine.MAX_GUARDS and per_entry_spy == []


@needs_guard
def test_canary_a_guard_without_the_targets_sizes_copies_a_transposed_value(per_entry_spy,
                                                                            monkeypatch):
    """The planted bug: the guard built with every size dynamic passes a fresh [6, 4] for a
    [4, 6] target, and the copy fails mid-refill (red) instead of the reference recomputing."""
    real = engine._TensorGuards

    def sizeless(*tensors: torch.Tensor, dynamic_dims_sizes: Any, dynamic_dims_strides: Any) \
            -> Any:
        assert dynamic_dims_sizes is None  # each check takes its tensor's sizes
        return real(*tensors, dynamic_dims_sizes=[[None] * t.dim() for t in tensors],
                    dynamic_dims_strides=dynamic_dims_strides)

    monkeypatch.setattr(engine, "_TensorGuards", sizeless)
    model, plan, _startup = _guarded(per_entry_spy)
    model.load(0)
    model.post_load()
    _plant(model, "transposed")
    with pytest.raises(RuntimeError, match="must match the size"):
        plan.refill()


@needs_guard
@pytest.mark.parametrize("layout", ["shape", "transposed"])
def test_a_partly_rebuilt_read_keeps_its_guard_per_mask_and_refuses_a_wrong_layout(
        per_entry_spy, layout):
    """One layer's post-load reruns (the others keep our tensors): the mask's guard is built
    once, proves the next reads alone, and refuses a wrong layout there."""
    model, plan, startup = _compiled_and_refilled(per_entry_spy)
    for seed in (1, 0):
        model.load(seed)
        model.layers[3].post_load()
        assert plan.refill(verify=True).moved == []
        _check_against_cold(model, startup, seed)
    layer3 = [part for mask, part in plan._refill_table._parts.items() if any(mask)]
    assert len(layer3) == 1 and layer3[0].layouts._guard is not None
    assert per_entry_spy == []
    model.load(1)
    model.layers[3].post_load()
    name = _plant(model, layout)
    report = plan.refill(verify=True)
    assert f"layers.3.{name}" in per_entry_spy
    assert report.moved == [] and getattr(model.layers[3], name) is startup[f"layers.3.{name}"]
    _check_against_cold(model, startup, 1)


def test_a_guard_torch_cannot_build_leaves_the_sweeps_deciding(per_entry_spy, monkeypatch):
    """A torch whose private ``TensorGuards`` takes other arguments: the refill still checks
    every layout by the sweeps, builds no guard and refuses a wrong one."""
    def refuses(*args: Any, **kwargs: Any) -> None:
        raise TypeError("unexpected keyword argument 'dynamic_dims_sizes'")
    monkeypatch.setattr(engine, "_TensorGuards", refuses)
    model, plan, startup = _compiled_and_refilled(per_entry_spy)
    for _ in range(2):
        model.load(1)
        model.post_load()
        plan.refill()
        assert plan._refill_table._layouts._guard is None
        assert plan._refill_table._layouts._guards == engine.MAX_GUARDS
    model.load(0)
    model.post_load()
    name = _plant(model, "transposed")
    per_entry_spy.clear()
    report = plan.refill(verify=True)
    assert f"layers.3.{name}" in per_entry_spy
    assert report.moved == [] and getattr(model.layers[3], name) is startup[f"layers.3.{name}"]
    _check_against_cold(model, startup, 0)


@needs_guard
def test_the_guard_is_built_at_compile_so_the_first_refill_sweeps_nothing(monkeypatch):
    """``compile_plan`` (``Plan.prepare``) builds the refill table and, from its targets, the
    guard: the first all-rebuilt refill of the process is proven by it without a sweep (the
    first refill no longer pays for building it)."""
    sweeps: list[int] = []
    swept = Layouts.swept

    def spy(self: Layouts, theirs: list[Any]) -> bool:
        sweeps.append(len(theirs))
        return swept(self, theirs)

    model = _stack(0)
    plan = compile_plan(model, [SPEC])
    startup = {k: e.storage for k, e in plan.entries.items()}
    assert plan._refill_table._layouts._guard is not None
    monkeypatch.setattr(Layouts, "swept", spy)
    model.load(1)
    model.post_load()
    assert plan.refill(verify=True).moved == []
    _check_against_cold(model, startup, 1)
    assert sweeps == []


@needs_guard
@pytest.mark.parametrize("layout", list(WRONG))
def test_the_guard_built_at_compile_takes_the_targets_sizes_and_refuses_a_wrong_layout(
        per_entry_spy, layout):
    """The guard ``Plan.prepare`` builds from the targets themselves (each check taking its
    tensor's sizes, not a list of them): the first all-rebuilt refill with one wrong layout is
    declined by it and by the sweeps (the reference takes that holder), and no guard is built
    from the wrong tensors."""
    model = _stack(0)
    plan = compile_plan(model, [SPEC])
    startup = {k: e.storage for k, e in plan.entries.items()}
    layouts = plan._refill_table._layouts
    assert layouts._guard is not None and layouts._guards == 1
    model.load(1)
    model.post_load()
    name = _plant(model, layout)
    per_entry_spy.clear()
    report = plan.refill(verify=True)
    assert f"layers.3.{name}" in per_entry_spy
    assert report.moved == [] and getattr(model.layers[3], name) is startup[f"layers.3.{name}"]
    _check_against_cold(model, startup, 1)
    assert layouts._guards == 1


def _guard_builds(monkeypatch: Any) -> list[bool]:
    """The ``strides`` argument of every :meth:`Layouts.guard` build from now on (the spy
    builds the guard as the real one does)."""
    built: list[bool] = []
    guard = Layouts.guard

    def spy_guard(self: Layouts, theirs: list[Any], strides: bool = False) -> None:
        built.append(strides)
        guard(self, theirs, strides)

    monkeypatch.setattr(Layouts, "guard", spy_guard)
    return built


def _scaling_rebuilt(model: Any, seed: int, strided: int | None = None) -> dict[str, torch.Tensor]:
    """The engine's post-load step on the scaling model: every derived attribute rebuilt as a
    new tensor of its layout and new values (``strided``: that layer's ``prod`` a [8] view of
    stride 2, the same shape and dtype); the fresh values by path."""
    fresh = {}
    for i, layer in enumerate(model.layers):
        for name in ("inv", "prod", "strides"):
            old = getattr(layer, name)
            value = old + (seed + 1) * (i + 1)
            if i == strided and name == "prod":
                view = torch.empty(2 * old.numel(), dtype=old.dtype)[::2]
                value = view.copy_(value)
            setattr(layer, name, value)
            fresh[f"layers.{i}.{name}"] = value.clone()
    return fresh


@needs_guard
def test_the_compile_guard_takes_the_targets_strides_where_the_records_prove_them(
        per_entry_spy, monkeypatch):
    """Every record of the scaling model's refill targets proves row-major strides: the guard
    ``Plan.prepare`` builds takes the targets' own strides. A fresh tensor of the right shape
    and dtype but other strides fails it: the sweeps accept it (the same answer as before), the
    value is copied, and the guard is built again from the fresh tensors with any strides, so
    that contiguous and strided rebuilds after it are proven by the guard alone."""
    from derivgraph.tools.bench_scaling import scaling_model, scaling_spec
    sweeps: list[int] = []
    swept = Layouts.swept

    def spy(self: Layouts, theirs: list[Any]) -> bool:
        sweeps.append(len(theirs))
        return swept(self, theirs)

    built = _guard_builds(monkeypatch)
    model = scaling_model(3)
    plan = compile_plan(model, [scaling_spec()])
    startup = {k: e.storage for k, e in plan.entries.items()}
    layouts = plan._refill_table._layouts
    assert built == [True] and layouts._guards == 1 and len(plan._refill_table.ids) == 9
    monkeypatch.setattr(Layouts, "swept", spy)
    per_entry_spy.clear()
    with torch.no_grad():
        for seed, strided, sweeps_after, guards_after in (
                (0, None, [], 1), (1, 1, [9], 2), (2, None, [9], 2), (3, 2, [9], 2),
                (4, 0, [9], 2), (5, None, [9], 2)):
            fresh = _scaling_rebuilt(model, seed, strided)
            assert plan.refill(verify=True).moved == []
            assert (sweeps, layouts._guards) == (sweeps_after, guards_after), seed
            for path, value in fresh.items():
                layer, name = path.rsplit(".", 1)
                held = getattr(model.get_submodule(layer), name)
                assert held is startup[path] and torch.equal(held, value), path
    assert built == [True, False] and per_entry_spy == []


@needs_guard
@pytest.mark.parametrize("contiguous", [True, None])
def test_a_guard_takes_the_targets_strides_only_where_every_record_proves_them(
        monkeypatch, contiguous):
    """The refill table over a layout book whose records say row-major strides (True) or
    nothing (None, as for a column of another class): only the first builds the guard with the
    targets' own strides; the other takes any strides (a tensor without strides would abort
    torch's constructor)."""
    from derivgraph.column_layout import ColumnLayout
    from derivgraph.tools.bench_scaling import scaling_model, scaling_spec
    plan = compile_plan(scaling_model(3), [scaling_spec()])
    record = ColumnLayout(torch.Tensor, torch.float32, torch.Size([8]), torch.device("cpu"),
                          contiguous)

    class Book:
        def of(self, tensors: list[Any]) -> list[Any]:
            return [record] * len(tensors)

    built = _guard_builds(monkeypatch)
    table = RefillTable(plan.holders.table, plan._refill_targets(), set(), set(), Book())
    assert built == [contiguous is True] and table._layouts._guard is not None
    assert table._layouts.match(list(table.storages))


def test_a_guard_without_strides_is_built_only_where_the_records_prove_them(monkeypatch):
    """A model whose targets' records do not all prove row-major strides (parameters,
    buffers): the compile's guard takes any strides, as before."""
    built = _guard_builds(monkeypatch)
    compile_plan(_stack(0), [SPEC])
    assert built == [False]
