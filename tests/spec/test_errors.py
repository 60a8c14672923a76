"""Every validation error class: file, line, rule and fix, raised before any tensor is touched."""

from __future__ import annotations

import pytest
import torch
from pydantic import ValidationError

import derivgraph
from derivgraph import Rule, SpecValidationError, compile_plan, load_spec_file
from derivgraph.spec.check import check_specs
from tests.toy import Toy


def _issues_of(path):
    with pytest.raises(SpecValidationError) as info:
        compile_plan(Toy(), load_spec_file(path))
    return info.value.issues


def _snapshot(model):
    return {n: (t.data_ptr(), t.clone()) for n, t in model.state_dict(keep_vars=True).items()}


def _untouched(model, snap):
    now = model.state_dict(keep_vars=True)
    assert set(now) == set(snap)
    for n, (ptr, value) in snap.items():
        assert now[n].data_ptr() == ptr and torch.equal(now[n], value)


def test_schema_error_names_file_line_and_fix(fixtures):
    path = fixtures / "specs" / "bad_schema.yaml"
    with pytest.raises(SpecValidationError) as info:
        load_spec_file(path)
    (issue,) = info.value.issues
    assert issue.rule == Rule.SCHEMA
    assert issue.location.file == str(path) and issue.location.line == 9  # the `colour:` line
    assert "colour" in issue.message and "remove the unknown key" in issue.fix
    assert f"{path}:9" in str(info.value)


def test_invalid_yaml_reports_line(fixtures):
    with pytest.raises(SpecValidationError) as info:
        load_spec_file(fixtures / "specs" / "not_yaml.yaml")
    (issue,) = info.value.issues
    assert issue.rule == Rule.SCHEMA and issue.location.line >= 4


@pytest.mark.parametrize(
    ("name", "rule", "needle"),
    [
        ("bad_syntax.yaml", Rule.SYNTAX, "unsupported syntax"),
        ("unknown_op.yaml", Rule.UNKNOWN_OP, "unknown function 'recip'"),
        ("bad_arity.yaml", Rule.ARITY, "reciprocal takes 1 positional argument(s), got 2"),
        ("cyclic.yaml", Rule.CYCLE, "a -> b -> a"),
    ],
)
def test_model_free_validation(fixtures, name, rule, needle):
    specs = load_spec_file(fixtures / "specs" / name)
    issues = check_specs(specs)
    assert [i.rule for i in issues] == [rule]
    assert needle in issues[0].message
    assert issues[0].location.line == 6  # the derived entry's line
    assert issues[0].fix


@pytest.mark.parametrize(
    ("name", "rule", "needle"),
    [
        ("bad_syntax.yaml", Rule.SYNTAX, "unsupported syntax"),
        ("unknown_op.yaml", Rule.UNKNOWN_OP, "recip"),
        ("bad_arity.yaml", Rule.ARITY, "got 2"),
        ("cyclic.yaml", Rule.CYCLE, "a -> b -> a"),
        ("unknown_name.yaml", Rule.UNKNOWN_NAME, "no_such_scale"),
        ("missing_source.yaml", Rule.MISSING_SOURCE, "nothing_here"),
        ("dtype_mismatch.yaml", Rule.MISMATCH, "declared dtype int64 but the formula gives"),
        ("shape_mismatch.yaml", Rule.MISMATCH, "declared shape ['E', 2] = [4, 2]"),
        ("duplicate.yaml", Rule.DUPLICATE, "declared by second:inv and by first:inv"),
        ("alias_bad_target.yaml", Rule.ALIAS, "not a tensor path"),
        ("owner_kind.yaml", Rule.OWNER, "needs an nn.Module owner"),
        ("inference_fail.yaml", Rule.INFERENCE, "fails on shapes/dtypes"),
    ],
)
def test_bound_validation_errors_touch_nothing(fixtures, name, rule, needle):
    model = Toy()
    snap = _snapshot(model)
    with pytest.raises(SpecValidationError) as info:
        compile_plan(model, load_spec_file(fixtures / "specs" / name))
    issues = info.value.issues
    assert rule in [i.rule for i in issues], str(info.value)
    issue = next(i for i in issues if i.rule == rule)
    assert needle in issue.message, str(info.value)
    assert issue.location.file.endswith(name) and issue.location.line > 0
    assert issue.fix
    _untouched(model, snap)
    assert not hasattr(model, "inv")


def test_cycle_message_prints_the_cycle(fixtures):
    issues = _issues_of(fixtures / "specs" / "cyclic.yaml")
    cyc = next(i for i in issues if i.rule == Rule.CYCLE)
    assert cyc.message.endswith("cycle: a -> b -> a") and cyc.node == "cyclic:a"


def test_adoption_mismatch_is_an_error_and_touches_nothing():
    model = Toy()
    model.inv = 1.0 / model.scale + 1e-3  # the engine made something else
    engine_tensor = model.inv
    snap = _snapshot(model)
    spec = derivgraph.Spec(
        name="inv", target=derivgraph.Target(module_class=["Toy"]),
        derived=[derivgraph.DerivedTensor(name="inv", kind="attribute",
                                          formula="reciprocal(scale)")],
    )
    with pytest.raises(derivgraph.AdoptionError) as info:
        compile_plan(model, [spec])
    (issue,) = info.value.issues
    assert issue.rule == Rule.ADOPTION and "differs from the formula" in issue.message
    assert "tolerance" in issue.fix
    assert model.inv is engine_tensor
    _untouched(model, snap)
    # a tolerance that covers the difference adopts the engine's tensor
    spec.derived[0].tolerance = 1e-2
    plan = compile_plan(model, [spec])
    assert plan.entries["inv"].adopted and plan.entries["inv"].storage is engine_tensor


def test_adoption_kind_mismatch():
    model = Toy()
    model.register_buffer("inv", model.scale.reciprocal(), persistent=False)
    spec = derivgraph.Spec(
        name="inv", target=derivgraph.Target(module_class=["Toy"]),
        derived=[derivgraph.DerivedTensor(name="inv", kind="attribute",
                                          formula="reciprocal(scale)")],
    )
    with pytest.raises(derivgraph.AdoptionError, match="as a buffer, the spec says attribute"):
        compile_plan(model, [spec])


def test_engine_alias_must_be_declared_as_alias():
    model = Toy()
    shared = model.scale.reciprocal()
    model.a, model.b = shared, shared
    spec = derivgraph.Spec(
        name="two", target=derivgraph.Target(module_class=["Toy"]),
        derived=[
            derivgraph.DerivedTensor(name="a", kind="attribute", formula="reciprocal(scale)"),
            derivgraph.DerivedTensor(name="b", kind="attribute", formula="reciprocal(scale)"),
        ],
    )
    with pytest.raises(derivgraph.AdoptionError) as info:
        compile_plan(model, [spec])
    assert info.value.issues[0].rule == Rule.ALIAS
    assert "declare b as kind 'alias'" in info.value.issues[0].fix


@pytest.mark.parametrize(
    ("fields", "needle"),
    [
        ({"kind": "alias", "name": "x"}, "needs `of`"),
        ({"kind": "alias", "name": "x", "of": "a", "formula": "a"}, "an alias has no formula"),
        ({"kind": "attribute", "name": "x"}, "needs a formula"),
        ({"kind": "attribute", "name": "x", "formula": "a", "of": "b"}, "only for kind 'alias'"),
        ({"kind": "attribute", "name": "x y", "formula": "a"}, "Python identifier"),
        ({"kind": "attribute", "name": "x", "owner": "a..b", "formula": "a"}, "attribute path"),
        ({"kind": "vector", "name": "x", "formula": "a"}, "Input should be"),
        ({"kind": "attribute", "name": "x", "formula": "a", "persistent": True}, "only applies"),
    ],
)
def test_python_spec_validation(fields, needle):
    with pytest.raises(ValidationError, match=needle):
        derivgraph.DerivedTensor(**fields)


def test_target_needs_a_class():
    with pytest.raises(ValidationError, match="needs module_class or quant_method_class"):
        derivgraph.Target()
    with pytest.raises(ValidationError, match="object_class needs object"):
        derivgraph.Target(module_class="Toy", object_class=["K"])


def test_duplicate_key_in_yaml_is_reported():
    text = "version: 1\nspecs:\n  - name: a\n    name: b\n"
    with pytest.raises(SpecValidationError, match="appears twice"):
        derivgraph.load_spec_text(text, "dup.yaml")


def test_all_errors_collected_at_once(fixtures):
    with pytest.raises(SpecValidationError) as info:
        derivgraph.load_specs([fixtures / "specs" / "bad_schema.yaml",
                               fixtures / "specs" / "not_yaml.yaml"])
    assert len(info.value.issues) == 2


def test_declared_device_must_match_sources():
    spec = derivgraph.Spec(
        name="dev", target=derivgraph.Target(module_class=["Toy"]),
        derived=[derivgraph.DerivedTensor(name="inv", kind="attribute",
                                          formula="reciprocal(scale)", device="meta")],
    )
    with pytest.raises(SpecValidationError) as info:
        compile_plan(Toy(), [spec])
    (issue,) = info.value.issues
    assert issue.rule == Rule.MISMATCH and "declared device meta but the sources are on cpu" in \
        issue.message
