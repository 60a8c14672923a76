"""A failed compile puts back what it bound: an entry column's owners are recorded as the
column's one fresh name (removed on rollback), every other owner and every object on the way
to one recorded whole; the model is left as it was, key order included."""

from __future__ import annotations

from typing import Any

import pytest
import torch
from torch import nn

import derivgraph.planner as planner
from derivgraph.compiler.stamp import stamping
from derivgraph.compiler.transaction import ModelTransaction
from derivgraph.tools.bench_scaling import scaling_model, scaling_spec
from tests.compiler.scaling_variants import spec_with_generic_rows


def _state(model: nn.Module) -> dict[str, Any]:
    """Every module's attribute names in order (with each value's identity) and its
    registries' names in order."""
    out: dict[str, Any] = {}
    for path, module in model.named_modules():
        out[path] = ([(k, id(v)) for k, v in vars(module).items()],
                     [list(getattr(module, r)) for r in ("_parameters", "_buffers", "_modules")])
    return out


_spec_with_generic_rows = spec_with_generic_rows


class _Fault(RuntimeError):
    pass


@pytest.mark.parametrize("spec", [scaling_spec, _spec_with_generic_rows])
def test_a_compile_failing_after_its_column_binds_leaves_every_module_as_it_was(
        monkeypatch: pytest.MonkeyPatch, spec: Any) -> None:
    model = scaling_model(24)
    before = _state(model)
    seen: list[int] = []

    def failing_lower(plan: Any, *args: Any, **kwargs: Any) -> None:
        seen.append(len(plan.entries.columns))
        assert isinstance(model.layers[7].inv, torch.Tensor)  # the columns are bound by now
        raise _Fault("after the binds")

    monkeypatch.setattr(planner, "_lower", failing_lower)
    with stamping(True), pytest.raises(_Fault):
        planner.compile_plan(model, [spec()])
    assert seen and seen[0] >= 2  # entry columns were made (and bound)
    assert _state(model) == before
    assert not any(hasattr(layer, "inv") or hasattr(layer, "scale_alias")
                   for layer in model.layers)


def test_a_fresh_name_is_removed_and_a_whole_record_put_back() -> None:
    model = scaling_model(3)
    layers = list(model.layers)
    before = _state(model)
    tx = ModelTransaction(model, ["layers.2"], [], fresh=[(layers[:2], "made")])
    for layer in layers:  # layers 0-1: the fresh name only; layer 2: recorded whole
        layer.__dict__["made"] = torch.zeros(1)
    layers[2].other = 1
    model.layers.extra = nn.Linear(1, 1)  # on the way to layers.2
    tx.rollback()
    assert _state(model) == before


def test_canary_a_fresh_name_not_removed_is_seen(monkeypatch: pytest.MonkeyPatch) -> None:
    """The state check above sees a column name left bound (planted: no fresh record)."""
    model = scaling_model(24)
    before = _state(model)
    real = ModelTransaction.__init__

    def no_fresh(self: ModelTransaction, *args: Any, **kwargs: Any) -> None:
        real(self, *args, **kwargs)
        self._fresh = []  # planted

    monkeypatch.setattr(ModelTransaction, "__init__", no_fresh)
    monkeypatch.setattr(planner, "_lower", lambda *a, **k: (_ for _ in ()).throw(_Fault()))
    with stamping(True), pytest.raises(_Fault):
        planner.compile_plan(model, [scaling_spec()])
    assert _state(model) != before
