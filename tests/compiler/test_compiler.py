"""The compiler (issue 7) and its faults (issue 8): printed pass, bit-exactness, bugs A-D."""

from __future__ import annotations

import pytest
import torch

import derivgraph
from derivgraph import DerivedTensor, Spec, Target, compile_plan, load_specs
from derivgraph.audit.runtime.census import fingerprint
from derivgraph.compiler.ir import NodeKind
from derivgraph.errors import PassFault, SourceChanged
from derivgraph.planner import bits_equal
from derivgraph.spec.kinds import TensorKind
from derivgraph.tools.reference_models import (
    RefConfig,
    build_reference_model,
    make_weights,
    reference_spec_path,
)
from tests.toy import Toy, ToyStack

CFG = RefConfig(layers=3)


def _spec(*derived: DerivedTensor, params=None) -> Spec:
    return Spec(name="t", target=Target(module_class=["Toy"]), params=params or {},
                derived=list(derived))


def _d(name: str, formula: str | None = None, kind: str = "attribute", **kw) -> DerivedTensor:
    return DerivedTensor(name=name, formula=formula, kind=kind, **kw)


def _reference(seed_a=1, seed_b=2):
    weights = {"A": make_weights(CFG, seed_a), "B": make_weights(CFG, seed_b)}
    model = build_reference_model(weights["A"], cfg=CFG)
    plan = compile_plan(model, load_specs([reference_spec_path()]), require_match=True)
    return model, plan, weights


def _snapshot(plan):
    return {k: e.storage.clone() for k, e in plan.entries.items()
            if isinstance(e.storage, torch.Tensor)}


def test_printed_source_is_the_pass_bit_for_bit():
    model, plan, weights = _reference()
    src = plan.source()
    assert src.endswith(plan.program.source)  # the printed function is the exec'd function
    assert plan.program.fn.__code__.co_name == "reload_pass"
    assert "torch._foreach_reciprocal_(" in src and "ops.cat.out(" in src
    model.load_weights(weights["B"])
    namespace = dict(plan.bindings)  # what the names in the header are bound to
    exec(compile(plan.program.source, "<printed>", "exec"), namespace)
    namespace["reload_pass"]()
    printed = _snapshot(plan)
    for e in plan.entries.values():  # poison, then run the real thing
        if isinstance(e.storage, torch.Tensor) and e.storage.dtype.is_floating_point:
            e.storage.fill_(float("nan"))
    model.load_weights(weights["A"])
    model.load_weights(weights["B"])
    plan.run()
    after = _snapshot(plan)
    assert printed.keys() == after.keys()
    for k in printed:
        assert bits_equal(printed[k], after[k]), k


def test_grouped_pass_equals_eager_per_op_evaluation():
    model, plan, weights = _reference()
    assert plan.program.groups == 2  # across layers, identical ops run as one foreach call
    model.load_weights(weights["B"])
    plan.run()
    values = plan.evaluate()
    checked = 0
    for key, entry in plan.entries.items():
        if entry.node.kind in (TensorKind.PARAMETER, TensorKind.BUFFER, TensorKind.ATTRIBUTE):
            assert bits_equal(entry.storage, values[key]), key
            checked += 1
    assert checked == 3 * 8 + 1


def test_constants_are_computed_at_compile_only():
    model, plan, _ = _reference()
    constant = plan.entries["layers.0.moe.quant_method.moe_kernel.fused_experts.ab_strides1"]
    assert all(constant.id not in (s.target, s.node) for s in plan.steps)
    assert "full" not in plan.program.source
    with torch.no_grad():
        constant.storage.fill_(-1)  # nothing in the pass rewrites it
    plan.run()
    assert int(constant.storage[0]) == -1


def test_selective_run_costs_only_its_cone():
    model, plan, weights = _reference()
    model.load_weights(weights["B"])
    report = plan.run(updated=["layers.1.moe"])
    assert report.written == 4  # g1, g2, a1, a2 of layer 1
    full = plan.run()
    assert full.written > 4 * 3


def test_derived_index_is_a_getitem_bug_a():
    model = Toy()
    plan = compile_plan(model, [_spec(_d("sq", "weight * 2.0"), _d("row", "sq[1]"),
                                      _d("col", "weight[0]"))])
    assert torch.equal(model.row, model.weight[1] * 2.0)
    assert torch.equal(model.col, model.weight[0])
    model.load(seed=3)
    plan.run()
    assert torch.equal(model.row, model.weight[1] * 2.0)


def test_alias_of_a_view_is_bound_bug_b():
    model = Toy()
    plan = compile_plan(model, [_spec(
        _d("fused", "cat([weight, weight * 2.0], 0)", "buffer"),
        _d("top", "fused[0:4]", "view"),
        _d("top_alias", kind="alias", of="top"),
        _d("top_t", "transpose(top_alias, 0, 1)", "view"),
    )])
    assert model.top_alias is model.top and model.top_alias is not None
    assert model.top_t.untyped_storage().data_ptr() == model.fused.untyped_storage().data_ptr()
    model.load(seed=8)
    plan.run(verify=True)
    assert torch.equal(model.top_alias, model.weight) and torch.equal(model.top_t, model.weight.t())


def test_unresolved_derived_reports_dg003_bug_c():
    spec = _spec(_d("a", "reciprocal(no_such_tensor)"), _d("b", "reshape(a, [4])"))
    model = Toy()
    with pytest.raises(derivgraph.SpecValidationError) as err:
        compile_plan(model, [spec])
    assert [i.rule for i in err.value.issues] == [derivgraph.Rule.UNKNOWN_NAME]
    assert not hasattr(model, "a") and not hasattr(model, "b")


def test_infinities_adopt_bug_d():
    model = Toy()
    with torch.no_grad():
        model.scale[0] = 0.0
    model.inv = torch.reciprocal(model.scale)  # the engine's tensor holds +inf
    plan = compile_plan(model, [_spec(_d("inv", "reciprocal(scale)"))])
    assert plan.entries["inv"].adopted and torch.isinf(model.inv[0])


def test_ir_kinds_are_enums():
    model, plan, _ = _reference()
    kinds = {n.kind for n in plan.graph.nodes.values()}
    assert kinds == {NodeKind.SOURCE, NodeKind.OP, NodeKind.DERIVED}
    assert all(isinstance(e.node.kind, TensorKind) for e in plan.entries.values())
    assert TensorKind.ALIAS == "alias" and f"{TensorKind.VIEW}" == "view"  # YAML/JSON compatible


class _Boom:
    armed = False


def _boom(x):
    if _Boom.armed:
        raise RuntimeError("injected fault")
    return x * 3.0


def _boom_out(x, *, out):
    if _Boom.armed:
        raise RuntimeError("injected fault")
    return torch.mul(x, 3.0, out=out)


@pytest.fixture
def boom_op():
    derivgraph.register_op("test_boom", _boom, out=_boom_out)
    _Boom.armed = False
    yield
    _Boom.armed = False
    derivgraph.unregister_op("test_boom")


def test_fault_mid_pass_names_node_and_rerun_recovers(boom_op):
    model = ToyStack(3)
    spec = Spec(name="t", target=Target(module_class=["Toy"]), derived=[
        _d("inv", "reciprocal(scale)"), _d("tripled", "test_boom(weight)", owner="holder")])
    plan = compile_plan(model, [spec])
    for i, layer in enumerate(model.layers):
        layer.load(seed=40 + i)
    sources = {n: fingerprint(t) for n, t in model.named_parameters()}
    _Boom.armed = True
    with pytest.raises(PassFault) as err:
        plan.run()
    assert err.value.rule == derivgraph.Rule.PASS_FAULT
    assert "layers.0.holder.tripled" in str(err.value) and "owner layers.0.holder" in str(err.value)
    assert "injected fault" in str(err.value)
    assert {n: fingerprint(t) for n, t in model.named_parameters()} == sources  # untouched
    _Boom.armed = False
    plan.run(verify=True)
    cold = ToyStack(3)
    for i, layer in enumerate(cold.layers):
        layer.load(seed=40 + i)
    compile_plan(cold, [spec])
    for mine, ref in zip(model.layers, cold.layers):
        assert bits_equal(mine.inv, ref.inv) and bits_equal(mine.holder.tripled, ref.holder.tripled)


def test_interrupted_pass_propagates_and_rerun_fixes(boom_op):
    """A pass killed mid-way (KeyboardInterrupt) leaves nothing a rerun cannot fix."""
    model = Toy()
    plan = compile_plan(model, [_spec(_d("inv", "reciprocal(scale)"),
                                      _d("t", "test_boom(weight)"))])
    model.load(seed=5)

    def interrupt(x, *, out):
        torch.mul(x, 0.0, out=out)  # half-written garbage first
        raise KeyboardInterrupt

    derivgraph.register_op("test_boom", _boom, out=interrupt, replace=True)
    plan._bind_all()  # the op namespace is bound at compile: rebind to use the new variant
    with pytest.raises(KeyboardInterrupt):
        plan.run()
    derivgraph.register_op("test_boom", _boom, out=_boom_out, replace=True)
    plan._bind_all()
    plan.run(verify=True)
    assert bits_equal(model.t, model.weight * 3.0)
    assert bits_equal(model.inv, torch.reciprocal(model.scale))


def _shape_change(model):
    with torch.no_grad():
        model.weight.data = torch.randn(6, 3)


def test_source_shape_change_refused_in_strict_mode():
    model = Toy()
    plan = compile_plan(model, [_spec(_d("sq", "weight * 2.0"), _d("inv", "reciprocal(scale)"))])
    before = model.sq.clone()
    _shape_change(model)
    with pytest.raises(SourceChanged) as err:
        plan.run()
    assert err.value.paths == ["weight"] and "DG031" in str(err.value)
    assert torch.equal(model.sq, before)  # refused before anything was written


def test_source_shape_change_reallocates_in_permissive_mode():
    model = Toy()
    plan = compile_plan(model, [_spec(_d("sq", "weight * 2.0"), _d("inv", "reciprocal(scale)"))],
                        strict=False)
    inv = model.inv
    _shape_change(model)
    report = plan.run()
    assert report.reallocated == ["sq"]
    assert "sq (moved: graph recapture required)" in report.recapture_required
    assert model.sq.shape == (6, 3) and torch.equal(model.sq, model.weight * 2.0)
    assert model.inv is inv  # unaffected tensors keep their storage
    assert plan.run(verify=True).moved == []


def test_traceback_through_the_pass_shows_the_generated_line(boom_op):
    """The generated pass is registered with linecache: a fault's traceback prints its line."""
    import traceback

    model = Toy()
    plan = compile_plan(model, [_spec(_d("t", "test_boom(weight)"))])
    _Boom.armed = True
    with pytest.raises(PassFault) as err:
        plan.run()
    text = "".join(traceback.format_exception(err.value))
    assert "<derivgraph reload_pass" in text
    assert "ops.test_boom.out(src_weight, out=t)" in text  # the generated line, not a blank


def _exec_printed(plan, kind="run", updated=None):
    """Run the printed text of ``plan.source(kind, updated=...)`` in a copy of its namespace."""
    from derivgraph.runtime.report import RunReport

    src = plan.source(kind, updated=updated)
    namespace = dict(plan.bindings)
    exec(compile(src, "<printed>", "exec"), namespace)
    name = kind if updated is None else f"{kind}_updated"
    report = RunReport(mode="refill" if kind == "refill" else "recompute")
    with torch.no_grad():
        namespace[name](report)
    return report


def _poison(plan):
    for e in plan.entries.values():
        if isinstance(e.storage, torch.Tensor) and e.storage.dtype.is_floating_point:
            e.storage.fill_(float("nan"))


@pytest.mark.parametrize("updated", [None, ["layers.1.moe"]])
def test_printed_run_is_what_run_executes(updated):
    model, plan, weights = _reference()
    model.load_weights(weights["B"])
    printed_report = _exec_printed(plan, "run", updated)
    printed = _snapshot(plan)
    _poison(plan)
    model.load_weights(weights["A"])
    plan.run()
    model.load_weights(weights["B"])
    report = plan.run(updated)
    after = _snapshot(plan)
    assert printed.keys() == after.keys()
    for k in printed:
        assert bits_equal(printed[k], after[k]), k
    assert (printed_report.steps, printed_report.written) == (report.steps, report.written)
    if updated is not None:
        assert "def run_updated(report):" in plan.source(updated=updated)
        assert "partial_pass" in plan.source(updated=updated)


def test_printed_refill_is_what_refill_executes():
    """A refill copies what the engine rebuilt and recomputes the rest; so does its text."""
    model = ToyStack(2)
    spec = _spec(_d("inv", "reciprocal(scale)"), _d("sq", "weight * 2.0"),
                 _d("m", "amax(scale)", "scalar"))
    plan = compile_plan(model, [spec])
    src = plan.source("refill")
    assert "def refill(report):" in src and "take_engine_values(report)" in src
    assert src.endswith(plan.program.source)

    def engine_reload(seed):
        for i, layer in enumerate(model.layers):
            layer.load(seed=seed + i)
            layer.inv = torch.reciprocal(layer.scale)  # the engine rebuilt this one only

    engine_reload(7)
    printed_report = _exec_printed(plan, "refill")
    printed = {**_snapshot(plan), **{f"layers.{i}.m": layer.m
                                     for i, layer in enumerate(model.layers)}}
    _poison(plan)
    engine_reload(3)
    plan.refill()
    engine_reload(7)
    report = plan.refill()
    after = {**_snapshot(plan), **{f"layers.{i}.m": layer.m
                                   for i, layer in enumerate(model.layers)}}
    for k, value in printed.items():
        assert bits_equal(value, after[k]) if isinstance(value, torch.Tensor) \
            else value == after[k], k
    assert printed_report.taken_from_engine == report.taken_from_engine == 2
    assert bits_equal(model.layers[1].sq, model.layers[1].weight * 2.0)


def test_printed_bound_views_show_their_base():
    model = ToyStack(2)
    plan = compile_plan(model, [_spec(_d("w2", "weight[1:3]"))])
    src = plan.source()
    assert "= ops.getitem.fn(src_layers_0_weight, slice(1, 3, None))" in src
    assert "%" not in src  # no node id stands in for a value
