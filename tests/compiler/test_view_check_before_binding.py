"""A view formula whose value copies (a ``reshape`` of a transposed tensor) is refused on the
evaluated values, before anything is bound: ``check_plan`` (which never binds) names it, and
``compile_plan`` raises it leaving the model as it was. Canary: the planned views' filter
finding none (``check_plan`` then reports nothing; the compile's second check, on the bound
storage, still refuses it).
"""

from __future__ import annotations

import pytest

from derivgraph import DerivedTensor, Rule, Spec, SpecValidationError, Target, compile_plan
from derivgraph.planner import check_plan
from tests.toy import Toy


def _spec(view: str) -> Spec:
    return Spec(name="t", target=Target(module_class=["Toy"]), params={}, derived=[
        DerivedTensor(name="f", formula="cat([weight, weight], 0)", kind="buffer"),
        DerivedTensor(name="v", formula=view, kind="view")])


@pytest.mark.parametrize("view", ["reshape(transpose(f, 0, 1), [-1])",
                                  "flatten(transpose(f, 0, 1))"])
def test_a_copying_view_is_named_before_binding(view: str) -> None:
    issues = check_plan(Toy(), [_spec(view)])
    assert [(i.rule, i.message) for i in issues] == [
        (Rule.ALIAS, "v is not a view of its base's storage")]
    model = Toy()
    before = dict(model.__dict__)
    with pytest.raises(SpecValidationError, match="not a view of its base"):
        compile_plan(model, [_spec(view)])
    assert model.__dict__ == before and "f" not in model._buffers


def test_a_true_view_passes() -> None:
    assert check_plan(Toy(), [_spec("transpose(f, 0, 1)")]) == []
