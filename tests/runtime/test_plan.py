"""The compiler and the reload pass: binding kinds, CSE, selective recompute, rebinding."""

from __future__ import annotations

import pytest
import torch
from torch import nn

import derivgraph
from derivgraph import DerivedTensor, Spec, Target, compile_plan, load_spec_text
from derivgraph.audit.runtime.census import fingerprint
from tests.toy import Kernel, Toy, ToyStack


def _spec(*derived: DerivedTensor, target: Target | None = None, params=None) -> Spec:
    return Spec(name="t", target=target or Target(module_class=["Toy"]), params=params or {},
                derived=list(derived))


def _d(name: str, formula: str | None = None, kind: str = "attribute", **kw) -> DerivedTensor:
    return DerivedTensor(name=name, formula=formula, kind=kind, **kw)


def test_allocates_binds_each_kind_once():
    model = Toy()
    plan = compile_plan(model, [_spec(
        _d("inv_param", "reciprocal(scale)", "parameter"),
        _d("inv_buf", "reciprocal(scale)", "buffer"),
        _d("inv_attr", "reciprocal(scale)"),
        _d("inv_on_holder", "reciprocal(scale)", owner="holder"),
        _d("scale_max", "amax(scale)", "scalar"),
    )])
    assert isinstance(model.inv_param, nn.Parameter) and "inv_param" in model._parameters
    assert "inv_buf" in model._buffers and "inv_buf" in model._non_persistent_buffers_set
    assert "inv_attr" in model.__dict__
    want = torch.reciprocal(model.scale)
    for t in (model.inv_param, model.inv_buf, model.inv_attr, model.holder.inv_on_holder):
        assert torch.equal(t, want)
    assert model.scale_max == float(model.scale.max())
    assert plan.not_refillable() == ["scale_max"]
    assert not any(e.adopted for e in plan.entries.values())


def test_run_refills_in_place_and_never_writes_sources():
    model = Toy()
    plan = compile_plan(model, [_spec(_d("inv", "reciprocal(scale)"), _d("sq", "weight * weight"))])
    inv, sq = model.inv, model.sq
    ptrs = (inv.data_ptr(), sq.data_ptr())
    model.load(seed=7)
    src_before = {n: fingerprint(t) for n, t in model.named_parameters()}
    report = plan.run(verify=True)
    assert {n: fingerprint(t) for n, t in model.named_parameters()} == src_before
    assert model.inv is inv and model.sq is sq and (inv.data_ptr(), sq.data_ptr()) == ptrs
    assert torch.equal(inv, torch.reciprocal(model.scale))
    assert torch.equal(sq, model.weight * model.weight)
    assert report.moved == [] and report.written == 2
    assert report.bytes == inv.numel() * 4 + sq.numel() * 4


def test_run_twice_is_bit_identical():
    model = Toy()
    plan = compile_plan(model, [_spec(_d("inv", "clamp(reciprocal(scale), 0.5, 1.5) * 3.0"))])
    model.load(seed=3)
    plan.run()
    first = model.inv.clone()
    plan.run()
    assert torch.equal(first, model.inv)


def test_common_subexpressions_are_computed_once():
    model = ToyStack(3)
    spec = _spec(
        _d("a", "reciprocal(scale) * 2.0"),
        _d("b", "reciprocal(scale) + 1.0"),
        _d("strides", "full([4], 3, dtype=int64)"),
    )
    plan = compile_plan(model, [spec])
    # per layer reciprocal(scale) is shared by a and b; full([4], 3) is shared by all 3 layers
    recips = [n for n, d in plan.graph.g.nodes(data=True) if d.get("op") == "reciprocal"]
    fulls = [n for n, d in plan.graph.g.nodes(data=True) if d.get("op") == "full"]
    assert len(recips) == 3 and len(fulls) == 1
    assert plan.graph.cse_hits == 3 + 2
    for i, layer in enumerate(model.layers):
        assert torch.equal(layer.a, torch.reciprocal(layer.scale) * 2.0), i
        assert torch.equal(layer.strides, torch.full((4,), 3, dtype=torch.int64))
        assert layer.strides is not model.layers[0].strides or i == 0  # storage is per tensor


def test_selective_recompute_touches_only_dependents():
    model = ToyStack(2)
    plan = compile_plan(model, [_spec(_d("inv", "reciprocal(scale)"), _d("sq", "weight * 2.0"))])
    stale = {(i, n): getattr(model.layers[i], n).clone() for i in (0, 1) for n in ("inv", "sq")}
    with torch.no_grad():
        for layer in model.layers:
            layer.scale.mul_(3.0)
            layer.weight.add_(1.0)
    report = plan.run(updated=["layers.0.scale"])
    assert report.written == 1
    assert torch.equal(model.layers[0].inv, torch.reciprocal(model.layers[0].scale))
    assert torch.equal(model.layers[0].sq, stale[0, "sq"])  # weight changed but was not named
    assert torch.equal(model.layers[1].inv, stale[1, "inv"])
    report = plan.run(updated=["layers.*.weight"])
    assert report.written == 2
    assert torch.equal(model.layers[1].sq, model.layers[1].weight * 2.0)
    report = plan.run(updated=["layers.1"])  # a module prefix covers all its sources
    assert report.written == 2
    assert torch.equal(model.layers[1].inv, torch.reciprocal(model.layers[1].scale))
    assert plan.run(updated=["not.a.source"]).written == 0


def test_alias_binding_and_rebinding_after_rebuild():
    model = Toy()
    model.post_load()
    spec = _spec(
        _d("strides", "full([E], C, dtype=int64)", owner="kernel"),
        _d("gscale", "1.0 / scale", owner="kernel.desc"),
        _d("scale", kind="alias", of="scale", owner="kernel.desc"),
        target=Target(module_class=["Toy"], object="kernel", object_class=["Kernel"]),
        params={"E": "weight.shape[0]", "C": "weight.shape[1]"},
    )
    plan = compile_plan(model, [spec])
    old_kernel = model.kernel
    startup = {k: e.storage for k, e in plan.entries.items()}
    assert all(e.adopted for e in plan.entries.values())  # the engine's tensors were adopted
    assert plan.entries["kernel.desc.scale"].storage is model.scale
    model.load(seed=5)
    model.post_load()  # rebuilds the kernel: new strides, new descriptor, new gscale
    assert model.kernel is not old_kernel and model.kernel.strides is not startup["kernel.strides"]
    report = plan.refill(verify=True)
    assert report.moved == [] and report.rebinds == 2  # desc.scale already is model.scale
    assert model.kernel.strides is startup["kernel.strides"]
    assert model.kernel.desc.gscale is startup["kernel.desc.gscale"]  # frozen dataclass rebound
    # what the old kernel (a captured graph) reads now holds the new values in place
    assert old_kernel.desc.gscale is startup["kernel.desc.gscale"]
    assert torch.equal(old_kernel.desc.gscale, 1.0 / model.scale)
    assert report.taken_from_engine == 2  # gscale, and the constant strides (kept as is)


def test_view_binding_shares_storage():
    model = Toy()
    spec = _spec(
        _d("fused", "cat([weight, weight * 2.0], 0)", "buffer"),
        _d("top", "fused[0:4]", "view"),
        _d("bottom_t", "transpose(fused[4:8], 0, 1)", "view"),
    )
    plan = compile_plan(model, [spec])
    base = model.fused.untyped_storage().data_ptr()
    assert model.top.untyped_storage().data_ptr() == base
    assert model.bottom_t.untyped_storage().data_ptr() == base
    assert model.bottom_t.shape == (3, 4)
    model.load(seed=9)
    plan.run(verify=True)
    assert torch.equal(model.top, model.weight)
    assert torch.equal(model.bottom_t, (model.weight * 2.0).t())


def test_view_rejects_copying_ops():
    spec = _spec(_d("f", "cat([weight, weight], 0)", "buffer"), _d("v", "f * 2.0", "view"))
    try:
        compile_plan(Toy(), [spec])
    except derivgraph.SpecValidationError as exc:
        assert exc.issues[0].rule == derivgraph.Rule.ALIAS and "copy" in exc.issues[0].message
    else:
        raise AssertionError("a copying view formula must be rejected")


def test_scalars_are_reported_not_refillable():
    model = Toy()
    plan = compile_plan(model, [_spec(_d("scale_max", "amax(scale)", "scalar"))])
    before = model.scale_max
    report = plan.run()
    assert report.recapture_required == []
    model.load(seed=11)
    report = plan.run()
    assert report.recapture_required == ["scale_max"]
    assert model.scale_max == float(model.scale.max()) != before
    assert "NOT refillable: graph recapture required" in plan.source()


def test_gather_pattern_and_params():
    class Drafter(nn.Module):
        def __init__(self):
            super().__init__()
            self.q_size = 2
            self.layers = nn.ModuleList(nn.Linear(3, 5, bias=False) for _ in range(12))

    model = Drafter()
    spec = Spec(name="fused", target=Target(module_class=["Drafter"]), params={"q": "q_size"},
                derived=[_d("kv", "cat([w[q:] for w in each('layers.*.weight')], 0)"),
                         _d("norms", "stack([abs(w) for w in each('layers.*.weight')], 0)")])
    compile_plan(model, [spec])
    # natural order: layers.2 before layers.10
    want = torch.cat([layer.weight[2:] for layer in model.layers], 0)
    assert torch.equal(model.kv, want) and model.kv.shape == (36, 3)
    assert model.norms.shape == (12, 5, 3)


def test_target_where_predicates():
    model = ToyStack(2)
    model.layers[0].backend = "cutlass"
    model.layers[1].backend = "triton"
    spec = _spec(_d("inv", "reciprocal(scale)"),
                 target=Target(module_class=["Toy"], where={"backend": ["cutlass", "flashinfer"]}))
    plan = compile_plan(model, [spec])
    assert list(plan.entries) == ["layers.0.inv"]
    assert not hasattr(model.layers[1], "inv")


def test_registered_op_and_out_variant():
    calls = {"fn": 0, "out": 0}

    def double(x):
        calls["fn"] += 1
        return x * 2

    def double_out(x, *, out):
        calls["out"] += 1
        return torch.mul(x, 2, out=out)

    derivgraph.register_op("test_double", double, out=double_out)
    try:
        model = Toy()
        plan = compile_plan(model, [_spec(_d("d", "test_double(scale)"))])
        calls["out"] = 0  # compile runs the lowered pass once to check it against eager
        model.load(seed=2)
        plan.run()
        assert torch.equal(model.d, model.scale * 2) and calls["out"] == 1
        assert "ops.test_double.out(src_scale, out=d)" in plan.source()
    finally:
        derivgraph.unregister_op("test_double")


def test_source_code_matches_steps():
    model = ToyStack(2)
    plan = compile_plan(model, [_spec(_d("inv", "reciprocal(scale)"), _d("w2", "weight[1:3]"))])
    src = plan.source()
    assert src.startswith("# Generated by derivgraph")
    # the two layers' reciprocals run as one foreach group over prebuilt lists
    assert "torch._foreach_reciprocal_(" in src
    assert "torch._foreach_copy_(" in src
    assert "= [layers.0.inv, layers.1.inv]" in src and "= [layers.0.scale, layers.1.scale]" in src
    compile(src, "<pass>", "exec")  # it is valid Python
    assert len(plan.steps) == 4  # 2 reciprocal(out=) + 2 copies; weight[1:3] is bound at compile


def test_plan_rows():
    model = Toy()
    plan = compile_plan(model, [_spec(_d("inv", "reciprocal(scale)", "buffer"))])
    (row,) = plan.rows()
    assert row["node"] == "inv" and row["kind"] == "buffer" and row["shape"] == [4]
    assert row["dtype"] == "float32" and row["bytes"] == 16 and row["op"] == "reciprocal"


def test_yaml_and_python_specs_are_equivalent():
    text = """
version: 1
specs:
  - name: t
    target: {module_class: Toy}
    derived:
      - {name: inv, kind: attribute, formula: reciprocal(scale)}
"""
    (from_yaml,) = load_spec_text(text, "inline.yaml")
    assert from_yaml.location.file == "inline.yaml" and from_yaml.derived[0].location.line == 7
    from_python = _spec(_d("inv", "reciprocal(scale)"))
    assert from_yaml.model_dump() == from_python.model_dump()


def test_plugin_entry_point_specs(monkeypatch, tmp_path):
    from derivgraph.spec import load as loader

    path = tmp_path / "plugin.yaml"
    path.write_text("version: 1\nspecs:\n  - name: from-plugin\n    target: {module_class: Toy}\n"
                    "    derived:\n"
                    "      - {name: inv, kind: attribute, formula: reciprocal(scale)}\n")

    class EP:
        name, value = "toy", "toy_pkg:specs"

        def load(self):
            return lambda: [str(path), _spec(_d("twice", "scale * 2.0"))]

    monkeypatch.setattr(loader, "entry_points", lambda group: [EP()] if group == "derivgraph.specs"
                        else [])
    names = [s.name for s in loader.plugin_specs()]
    assert names == ["from-plugin", "t"]
    model = Toy()
    plan = compile_plan(model, loader.plugin_specs())
    assert set(plan.entries) == {"inv", "twice"}


def test_rebuilt_kernel_missing_owner_is_reported():
    model = Toy()
    model.post_load()
    spec = _spec(_d("strides", "full([4], 3, dtype=int64)", owner="kernel"),
                 target=Target(module_class=["Toy"], object="kernel"))
    plan = compile_plan(model, [spec])
    model.kernel = None
    report = plan.run()
    assert report.missing_owners == ["kernel.strides"]
    model.kernel = Kernel(model.weight, model.scale)
    report = plan.run(verify=True)
    assert report.moved == [] and model.kernel.strides is plan.entries["kernel.strides"].storage


def test_data_rebind_is_restored_to_startup_storage():
    model = Toy()
    plan = compile_plan(model, [_spec(_d("inv", "reciprocal(scale)", "parameter"))])
    param, ptr = model.inv, model.inv.data_ptr()
    model.load(seed=4)
    with torch.no_grad():
        model.inv.data = torch.reciprocal(model.scale).clone()  # an engine's `.data =` rebind
    assert model.inv is param and model.inv.data_ptr() != ptr
    report = plan.refill(verify=True)
    assert report.restored == ["inv"] and report.moved == []
    assert model.inv is param and param.data_ptr() == ptr
    assert torch.equal(param, torch.reciprocal(model.scale))


def test_builtin_specs_stays_callable():
    """The spec-library package must never shadow the ``builtin_specs`` function."""
    first, second = derivgraph.builtin_specs(), derivgraph.builtin_specs()
    assert [s.name for s in first] == [s.name for s in second] and first


def test_where_not_predicate():
    model = ToyStack(3)
    model.layers[0].quant = None
    model.layers[1].quant = "fp8"
    spec = _spec(_d("inv", "reciprocal(scale)"),
                 target=Target(module_class=["Toy"], where={"quant": {"not": None}}))
    plan = compile_plan(model, [spec])
    assert list(plan.entries) == ["layers.1.inv"]  # layers.2 has no `quant` at all


def test_scalar_adoption_checks_the_engine_number():
    model = Toy()
    model.scale_max = float(model.scale.max())
    spec = _spec(_d("scale_max", "amax(scale)", "scalar"))
    plan = compile_plan(model, [spec])
    assert plan.entries["scale_max"].adopted
    model.scale_max = 2.0 * float(model.scale.max())  # the engine computes something else
    with pytest.raises(derivgraph.AdoptionError, match="differs from the formula"):
        compile_plan(model, [spec])
    assert model.scale_max == 2.0 * float(model.scale.max())  # untouched


def test_out_variant_is_not_used_when_inputs_alias_the_output():
    """A fused buffer whose parts are views of it: `cat(out=)` would overlap its inputs."""
    model = Toy()
    fused = torch.cat([model.weight.detach(), model.weight.detach() * 2.0], 0)
    model.register_buffer("fused", fused, persistent=False)
    model.main = fused[0:4]
    model.extra = fused[4:8]
    spec = _spec(_d("fused", "cat([main, extra], 0)", "buffer"))
    plan = compile_plan(model, [spec])
    assert [s.action for s in plan.steps if s.node == "fused"] == ["copy"]
    with torch.no_grad():
        model.main.mul_(3.0)
    plan.run(verify=True)
    assert torch.equal(model.fused[0:4], model.main)
