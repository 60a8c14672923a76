"""The guarantees under attack, beyond what a spec file alone can show: transactional compile,
storage that overlaps a source, derived scalars read by derived tensors, folds whose source
changed shape, index bounds after a permissive shape change, and faults named by node."""

from __future__ import annotations

import pytest
import torch
from torch import nn

from derivgraph import compile_plan, load_spec_text, register_op
from derivgraph.errors import AdoptionError, DerivgraphError, PassFault, Rule, SpecValidationError
from tests.fixtures.hostile.model import assert_unchanged, build, snapshot


def _spec(*derived: str, target: str = "HostileModel", params: str = "") -> list:
    lines = ["version: 1", "specs:", "  - name: attack", f"    target: {{module_class: {target}}}"]
    if params:
        lines.append(f"    params: {params}")
    lines += ["    derived:", *(f"      - {d}" for d in derived)]
    return load_spec_text("\n".join(lines) + "\n", "attack.yaml")


class _Calls:
    n = 0
    fail_after = 1


def _flaky(x: torch.Tensor) -> torch.Tensor:
    """Works on meta and for the first real call, then fails: a fault in the first lowered
    pass, after adoption and allocation."""
    if x.device.type != "meta":
        _Calls.n += 1
        if _Calls.n > _Calls.fail_after:
            raise RuntimeError("flaky op failed")
    return x * 2.0


register_op("attack_flaky", _flaky, replace=True)


def test_compile_failing_in_its_first_lowered_pass_leaves_the_model_as_it_was():
    model = build()
    before = snapshot(model)
    _Calls.n = 0
    specs = _spec('{name: w_copy, owner: holder, kind: attribute, formula: "weight * 2"}',
                  '{name: fresh, owner: holder, kind: attribute, formula: "reciprocal(scale)"}',
                  '{name: extra, kind: buffer, formula: "scale + 1"}',
                  '{name: z, owner: holder, kind: attribute, formula: "attack_flaky(scale) + 1"}')
    with pytest.raises(DerivgraphError) as info:
        compile_plan(model, specs)
    assert "holder.z" in str(info.value)
    assert_unchanged(model, before)  # no attribute bound, no buffer registered, adopted
    assert not hasattr(model.holder, "fresh") and "extra" not in model._buffers  # untouched


def test_the_transaction_canary_a_successful_compile_does_change_the_model():
    model = build()
    before = snapshot(model)
    _Calls.n, _Calls.fail_after = 0, 10 ** 9
    try:
        compile_plan(model, _spec('{name: z, owner: holder, kind: attribute, '
                                  'formula: "attack_flaky(scale) + 1"}'))
    finally:
        _Calls.fail_after = 1
    with pytest.raises(AssertionError):
        assert_unchanged(model, before)


@pytest.mark.parametrize("decl", [
    '{name: w_view, owner: holder, kind: engine}',
    '{name: w_view, owner: holder, kind: attribute, formula: "weight[0:2] * 1"}',
    '{name: w_view, owner: holder, kind: engine, formula: "weight[0:2] * 1"}',
])
def test_adopting_storage_that_overlaps_a_source_is_refused(decl):
    model = build()
    before = snapshot(model)
    with pytest.raises(AdoptionError) as info:
        compile_plan(model, _spec(decl))
    assert [i.rule for i in info.value.issues] == [Rule.ADOPTION]
    assert "weight" in str(info.value)
    assert_unchanged(model, before)


def test_an_exact_view_of_a_source_is_adopted_and_rewritten_in_place():
    """The engine holds a view of a weight and the formula is that very view (an unquantized
    MLA's W_UV over kv_b_proj.weight): adopted; each pass writes the weight's bytes onto
    themselves, so no byte of the source changes."""
    model = build()
    plan = compile_plan(model, _spec('{name: w_view, owner: holder, kind: attribute, '
                                     'formula: "weight[0:2]"}'))
    assert plan.entries["holder.w_view"].adopted
    with torch.no_grad():
        model.weight.copy_(torch.randn(4, 3))  # a load
    loaded = model.weight.clone()
    plan.run()
    assert torch.equal(model.weight, loaded) and torch.equal(model.holder.w_view, loaded[0:2])


def test_an_engine_copy_is_still_adopted():
    """Canary for the overlap rule: a tensor of its own is adopted, and refill writes it."""
    model = build()
    copy = model.holder.w_copy
    plan = compile_plan(model, _spec('{name: w_copy, owner: holder, kind: engine}'))
    assert plan.entries["holder.w_copy"].adopted and model.holder.w_copy is copy


def test_an_integer_the_engine_holds_is_not_overwritten_within_tolerance():
    model = build()
    with pytest.raises(AdoptionError):
        compile_plan(model, _spec('{name: n_rows, kind: scalar, formula: "amax(scale) * 0 + 5", '
                                  'tolerance: 100}'))
    assert model.n_rows == 4


def test_derived_tensors_read_the_current_value_of_a_derived_scalar():
    model = build()
    plan = compile_plan(model, _spec(
        '{name: top, owner: holder, kind: scalar, formula: "amax(scale)"}',
        '{name: y, owner: holder, kind: attribute, formula: "weight * top + 1"}'))
    for k in range(3):
        with torch.no_grad():
            model.scale.mul_(2.0)
        plan.run() if k != 1 else plan.run(updated=["scale"])
        top = model.scale.max()
        assert model.holder.top == float(top)
        assert torch.equal(model.holder.y, model.weight * top + 1), k


def test_engine_tensors_holding_infinities_are_adopted():
    model = build()
    with torch.no_grad():
        model.weight[0, 0] = float("inf")
        model.weight[1, 1] = float("nan")
    model.post_load()
    plan = compile_plan(model, _spec('{name: w_copy, owner: holder, kind: engine, '
                                     'formula: "weight * 2"}'))
    assert plan.entries["holder.w_copy"].adopted


class FoldNet(nn.Module):
    def __init__(self, rows: int = 4):
        super().__init__()
        self.layers = nn.ModuleList([nn.Module()])
        self.layers[0].s = nn.Parameter(torch.arange(1.0, rows + 1), requires_grad=False)
        self.layers[0].w = nn.Parameter(torch.ones(rows, 3), requires_grad=False)
        self.mult = 3.0


def test_a_fold_whose_source_changed_shape_folds_once():
    model = FoldNet()
    plan = compile_plan(model, load_spec_text(
        "version: 1\nspecs:\n  - name: f\n    target: {module_class: FoldNet}\n    derived:\n"
        "      - {name: s, owner: layers.0, kind: fold, formula: 's * m', config: {m: mult}}\n"
        "      - {name: d, kind: attribute, formula: 'layers[0].s + 1'}\n"))
    loaded = torch.arange(1.0, 7.0)
    model.layers[0].s = nn.Parameter(loaded.clone(), requires_grad=False)  # 4 -> 6 rows
    plan.run(strict=False)
    assert torch.equal(model.layers[0].s, loaded * 3.0)
    for _ in range(3):
        plan.run(strict=False)
        assert torch.equal(model.layers[0].s, loaded * 3.0)  # not x9, x27
    assert torch.equal(model.d, loaded * 3.0 + 1)


def test_a_permissive_shape_change_rechecks_index_bounds():
    model = FoldNet()
    plan = compile_plan(model, load_spec_text(
        "version: 1\nspecs:\n  - name: g\n    target: {module_class: FoldNet}\n    derived:\n"
        "      - {name: g, kind: attribute, "
        "formula: 'index_select(layers[0].w, 0, arange(4))'}\n"))
    model.layers[0].w = nn.Parameter(torch.ones(2, 3), requires_grad=False)  # 4 -> 2 rows
    before = model.g.clone()
    with pytest.raises(SpecValidationError) as info:
        plan.run(strict=False)
    assert Rule.INDEX_OUT_OF_RANGE in [i.rule for i in info.value.issues]
    assert torch.equal(model.g, before)


def _explode_when(flag: list[bool]):
    def op(x: torch.Tensor) -> torch.Tensor:
        if flag[0] and x.device.type != "meta":
            raise RuntimeError("device fault")
        return x * 2.0
    return op


def test_a_fault_in_the_pass_names_the_derived_tensor_and_writes_no_source():
    flag = [False]
    register_op("attack_fault", _explode_when(flag), replace=True)
    model = build()
    plan = compile_plan(model, _spec(
        '{name: f, owner: holder, kind: attribute, '
        'formula: "reciprocal(attack_fault(scale) + 1)"}'))
    before = {n: t.clone() for n, t in model.named_parameters()}
    flag[0] = True
    with pytest.raises(PassFault, match=r"holder\.f") as info:
        plan.run()
    assert info.value.rule == Rule.PASS_FAULT
    assert all(torch.equal(t, before[n]) for n, t in model.named_parameters())
    flag[0] = False
    plan.run()
    assert torch.equal(model.holder.f, torch.reciprocal(model.scale * 2.0 + 1))


def test_a_fault_in_a_fold_formula_names_the_fold_and_leaves_the_source():
    flag = [False]
    register_op("attack_fold_fault", _explode_when(flag), replace=True)
    model = FoldNet()
    plan = compile_plan(model, load_spec_text(
        "version: 1\nspecs:\n  - name: f\n    target: {module_class: FoldNet}\n    derived:\n"
        "      - {name: s, owner: layers.0, kind: fold, formula: 'attack_fold_fault(s)'}\n"))
    with torch.no_grad():
        model.layers[0].s.copy_(torch.tensor([5.0, 6.0, 7.0, 8.0]))  # a load
    flag[0] = True
    with pytest.raises(PassFault, match=r"layers\.0\.s"):
        plan.run()
    assert torch.equal(model.layers[0].s, torch.tensor([5.0, 6.0, 7.0, 8.0]))
    flag[0] = False
    plan.run()
    assert torch.equal(model.layers[0].s, torch.tensor([10.0, 12.0, 14.0, 16.0]))


def test_an_op_failing_at_compile_is_a_dg_error_naming_the_node():
    model = build()
    before = snapshot(model)
    with pytest.raises(SpecValidationError) as info:
        compile_plan(model, _spec('{name: x, owner: holder, kind: attribute, '
                                  'formula: "abs(hostile_explode(weight)) + 1"}'))
    (issue,) = info.value.issues
    assert issue.rule == Rule.PASS_FAULT and issue.node == "holder.x"
    assert issue.location.file == "attack.yaml" and issue.location.line == 6
    assert_unchanged(model, before)


def test_the_model_byte_budget_is_checked_before_allocation(monkeypatch):
    from derivgraph.limits import LIMITS

    monkeypatch.setattr(LIMITS, "max_model_alloc_bytes", 90)
    model = build()
    before = snapshot(model)
    with pytest.raises(SpecValidationError) as info:
        compile_plan(model, _spec(
            '{name: a, owner: holder, kind: attribute, formula: "weight * 2"}',
            '{name: b, owner: holder, kind: attribute, formula: "weight * 3"}'))
    (issue,) = info.value.issues
    assert issue.rule == Rule.RESOURCE_LIMIT and issue.node == "holder.b"  # 48 + 48 bytes > 90
    assert "DERIVGRAPH_MAX_MODEL_BYTES" in issue.message
    assert_unchanged(model, before)
