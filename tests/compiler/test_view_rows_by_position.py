"""The views checked before binding are read at the positions adoption decided row by row
(``planner._prepare``: its stamped columns take allocated tensors and aliases only, never a
view). Canary: a stack of stamped layers, each with a copying view next to stamped columns,
is refused naming every layer's view, by ``check_plan`` (no second check on bound storage)
and by ``compile_plan`` before anything is bound; a view row left out of those positions
would go unreported by ``check_plan``.
"""

from __future__ import annotations

import pytest
from torch import nn

from derivgraph import DerivedTensor, Rule, Spec, SpecValidationError, Target, compile_plan
from derivgraph.planner import check_plan
from tests.toy import Toy

LAYERS = 6


def _spec(view: str) -> Spec:
    return Spec(name="t", target=Target(module_class=["Toy"]), params={}, derived=[
        DerivedTensor(name="inv", formula="1.0 / scale", kind="attribute"),
        DerivedTensor(name="s_alias", kind="alias", of="scale"),
        DerivedTensor(name="f", formula="cat([weight, weight], 0)", kind="attribute"),
        DerivedTensor(name="v", formula=view, kind="view")])


def _stack() -> nn.Module:
    model = nn.Module()
    model.layers = nn.ModuleList(Toy(seed=i) for i in range(LAYERS))
    return model


def test_every_stamped_rows_copying_view_is_named() -> None:
    spec = _spec("reshape(transpose(f, 0, 1), [-1])")
    issues = check_plan(_stack(), [spec])
    assert [(i.rule, i.message) for i in issues] == [
        (Rule.ALIAS, f"layers.{i}.v is not a view of its base's storage") for i in range(LAYERS)]
    model = _stack()
    before = [dict(layer.__dict__) for layer in model.layers]
    with pytest.raises(SpecValidationError, match="not a view of its base") as raised:
        compile_plan(model, [spec])
    assert len(raised.value.issues) == LAYERS
    assert [dict(layer.__dict__) for layer in model.layers] == before


def test_true_views_of_stamped_rows_pass() -> None:
    model = _stack()
    plan = compile_plan(model, [_spec("transpose(f, 0, 1)")])
    assert len(plan.entries) == 4 * LAYERS
    assert {c.name for c in plan.entries.columns} >= {"inv", "s_alias"}  # stamped columns
    for i, layer in enumerate(model.layers):
        view = plan.entries[f"layers.{i}.v"].storage
        assert view.untyped_storage().data_ptr() == layer.f.untyped_storage().data_ptr()
        assert layer.s_alias is layer.scale
