"""Owner and name safety at bind time, resource limits that need a model, one rule set,
bug A (``x[3]`` on a plain name) and the torch-free validate catalogue."""

from __future__ import annotations

import json
import logging

import pytest
import torch
from torch import nn

import derivgraph
from derivgraph import Rule, SpecValidationError, compile_plan
from derivgraph.errors import LimitError
from derivgraph.limits import LIMITS, check_numel, fold_constant
from derivgraph.paths import MISSING, get_path, set_slot
from derivgraph.spec.check import check_specs
from derivgraph.spec.expr import CATALOGUE_PATH, registry_catalogue
from derivgraph.spec.model import MODULE_RESERVED
from tests.toy import Toy


def _spec(*derived: dict, params: dict | None = None, name: str = "s") -> derivgraph.Spec:
    return derivgraph.Spec(name=name, target=derivgraph.Target(module_class="Toy"),
                           params=params or {},
                           derived=[derivgraph.DerivedTensor(**d) for d in derived])


def _rules(model: nn.Module, spec: derivgraph.Spec) -> list[str]:
    with pytest.raises(SpecValidationError) as info:
        compile_plan(model, [spec])
    return [i.rule for i in info.value.issues]


def test_module_reserved_covers_installed_torch():
    members = {n for n in dir(nn.Module()) if not (n.startswith("__") and n.endswith("__"))}
    assert members <= MODULE_RESERVED, sorted(members - MODULE_RESERVED)


def test_op_catalogue_matches_the_registry():
    """validate checks ops without torch from schema/ops.json; it must equal the registry.
    Regenerate: python3 -c "import json; from derivgraph.spec.expr import registry_catalogue as r,
    CATALOGUE_PATH as p; p.write_text(json.dumps(r(), indent=1) + '\\n')"."""
    assert json.loads(CATALOGUE_PATH.read_text()) == registry_catalogue()


# ---- owner and name safety that needs the live model (validate cannot see these) ----------

@pytest.mark.parametrize(("decl", "needle"), [
    ({"name": "x", "owner": "post_load"}, "the owner is a function"),
    ({"name": "post_load"}, "Toy.post_load is a function of the owner's class"),
    ({"name": "sub"}, "holds a callable"),
    ({"name": "x", "owner": "weight"}, "the owner is a Parameter"),
    ({"name": "kernel"}, "Toy.kernel is None; binding would replace it"),
    ({"name": "flag", "owner": "holder"}, "Holder.flag holds a str"),
    ({"name": "dump_patches", "owner": "holder"}, "reserved by torch.nn.Module"),
])
def test_binding_never_replaces_what_is_not_a_tensor_slot(decl, needle):
    model = Toy()
    model.holder.flag = "keep me"
    before = {k: id(v) for k, v in vars(model).items()}
    spec = _spec({"kind": "attribute", "formula": "reciprocal(scale)", **decl})
    with pytest.raises(SpecValidationError) as info:
        compile_plan(model, [spec])
    (issue,) = info.value.issues
    assert issue.rule == Rule.UNSAFE_NAME and needle in issue.message, str(info.value)
    assert issue.fix
    assert {k: id(v) for k, v in vars(model).items()} == before
    assert model.holder.flag == "keep me" and model.kernel is None


def test_replace_true_binds_over_none_only():
    model = Toy()
    plan = compile_plan(model, [_spec({"name": "kernel", "kind": "attribute",
                                       "formula": "reciprocal(scale)", "replace": True})])
    assert torch.equal(model.kernel, model.scale.reciprocal())
    assert plan.moved() == []
    model = Toy()
    model.holder.flag = 3
    assert _rules(model, _spec({"name": "flag", "owner": "holder", "kind": "attribute",
                                "formula": "scale", "replace": True})) == [Rule.UNSAFE_NAME]


def test_scalar_may_refresh_a_number_the_engine_holds():
    model = Toy()
    model.holder.s = 0.0
    plan = compile_plan(model, [_spec({"name": "s", "owner": "holder", "kind": "scalar",
                                       "formula": "amax(scale)", "tolerance": 10.0})])
    assert model.holder.s == pytest.approx(float(model.scale.max()))
    assert plan.not_refillable() == ["holder.s"]


def test_paths_never_resolve_or_bind_dunders():
    model = Toy()
    assert get_path(model, "__class__") is MISSING
    assert get_path(model, "holder.__dict__") is MISSING
    with pytest.raises(ValueError, match="dunder"):
        set_slot(model.holder, "__class__", torch.zeros(1), "attribute")


def test_device_path_must_name_a_tensor():
    assert _rules(Toy(), _spec({"name": "x", "kind": "attribute", "formula": "scale",
                                "device": "holder"})) == [Rule.UNKNOWN_DEVICE]


# ---- resource limits that need the model -------------------------------------------------

def test_inferred_tensor_over_the_element_limit(monkeypatch):
    monkeypatch.setattr(LIMITS, "max_numel", 100)
    spec = _spec({"name": "big", "kind": "attribute", "formula": "full([E, E, E], 1.0)"},
                 params={"E": "weight.shape[0] + 1"})  # 125 elements, not literal
    assert check_specs([spec]) == []  # validate cannot know E
    model = Toy()
    assert _rules(model, spec) == [Rule.RESOURCE_LIMIT]
    assert not hasattr(model, "big")


def test_param_folding_is_bounded():
    spec = _spec({"name": "x", "kind": "attribute", "formula": "full([4], E ** 10 ** 6)"},
                 params={"E": "weight.shape[0]"})
    assert _rules(Toy(), spec) == [Rule.RESOURCE_LIMIT]
    spec = _spec({"name": "x", "kind": "attribute", "formula": "cast(scale, D * 10 ** 9)"},
                 params={"D": "'ab'"})
    assert _rules(Toy(), spec) == [Rule.RESOURCE_LIMIT]


def test_fold_and_numel_units():
    assert fold_constant("pow", 2, 62) == 2 ** 62 and fold_constant("mul", "ab", 3) == "ababab"
    for a, op, b in [(2, "pow", 10 ** 10), ("ab", "mul", 10 ** 9), (10.0, "pow", 400),
                     (2 ** 40, "mul", 2 ** 40), ([0], "mul", 10 ** 6)]:
        with pytest.raises(LimitError):
            fold_constant(op, a, b)
    with pytest.raises(ZeroDivisionError):
        fold_constant("div", 1, 0)
    check_numel([1000, 1000], "ok")
    with pytest.raises(LimitError, match="10000000000000000 elements"):
        check_numel([10 ** 8, 10 ** 8], "x")


# ---- one rule set ------------------------------------------------------------------------

def test_unmatched_spec_warns_by_default_and_fails_with_require_match(caplog):
    spec = derivgraph.Spec(name="nowhere", target=derivgraph.Target(module_class="NoSuch"),
                           derived=[derivgraph.DerivedTensor(name="x", kind="attribute",
                                                             formula="scale")])
    with caplog.at_level(logging.WARNING, logger="derivgraph"):
        plan = compile_plan(Toy(), [spec])
    assert len(plan) == 0
    assert any("nowhere" in r.getMessage() and r.levelno == logging.WARNING
               for r in caplog.records)
    assert _rules_require(spec) == [Rule.NO_MATCH]


def _rules_require(spec: derivgraph.Spec) -> list[str]:
    with pytest.raises(SpecValidationError) as info:
        compile_plan(Toy(), [spec], require_match=True)
    return [i.rule for i in info.value.issues]


def test_duplicate_spec_names_are_refused_at_compile_too():
    a = _spec({"name": "x", "kind": "attribute", "formula": "scale"}, name="same")
    b = _spec({"name": "y", "kind": "attribute", "formula": "scale"}, name="same")
    model = Toy()
    compile_plan(Toy(), [a])  # one of them alone compiles
    with pytest.raises(SpecValidationError) as info:
        compile_plan(model, [a, b])
    assert [i.rule for i in info.value.issues] == [Rule.DUPLICATE]
    assert not hasattr(model, "x") and not hasattr(model, "y")


# ---- bug A (parse side): x[3] on a plain name --------------------------------------------

def test_integer_index_of_a_plain_name_is_an_index():
    model = Toy()
    plan = compile_plan(model, [_spec(
        {"name": "row", "kind": "attribute", "formula": "weight[3]"},
        {"name": "row2", "kind": "attribute", "formula": "weight[3] * 2"},
        {"name": "rowv", "kind": "view", "formula": "weight[1]"},
        {"name": "last", "kind": "attribute", "formula": "weight[-1]"},
        {"name": "first_of_derived", "kind": "attribute", "formula": "row2[0]"},
    )])
    w = model.weight
    assert torch.equal(model.row, w[3]) and torch.equal(model.row2, w[3] * 2)
    assert torch.equal(model.last, w[-1]) and torch.equal(model.first_of_derived, w[3][0] * 2)
    assert model.rowv.untyped_storage().data_ptr() == w.untyped_storage().data_ptr()
    model.load(5)
    plan.run()
    assert torch.equal(model.row, model.weight[3]) and plan.moved() == []
