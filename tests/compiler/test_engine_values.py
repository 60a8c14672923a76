"""Engine-computed tensors (`kind: engine`): CUTLASS W4A8 b_strides1/2 as the first user."""

from __future__ import annotations

import pytest
import torch

from derivgraph import (
    AdoptionError,
    Rule,
    builtin_specs,
    compile_plan,
    load_spec_text,
    register_op,
    unregister_op,
)
from derivgraph.errors import EngineComputedError
from derivgraph.examples.cutlass_w4a8 import (
    build_w4a8_model,
    make_w4a8_weights,
    w4a8_layout_strides,
)
from derivgraph.paths import get_path
from derivgraph.spec.check import check_specs as validate_specs

QM = "layers.{i}.quant_method"
FE = "layers.{i}.quant_method.moe_kernel.fused_experts"
ENGINE = [f"{QM.format(i=i)}.b_strides{j}" for i in (0, 1) for j in (1, 2)]


def _specs():
    names = {"vllm-cutlass-w4a8-strides", "vllm-cutlass-w4a8-b-strides"}
    return [s for s in builtin_specs() if s.name in names]


def _holders(model, key):
    i, name = key.split(".")[1], key.rsplit(".", 1)[1]
    return get_path(model, f"{QM.format(i=i)}.{name}"), get_path(model, f"{FE.format(i=i)}.{name}")


def test_engine_tensors_are_adopted_at_compile():
    model = build_w4a8_model()
    engine_objects = {k: get_path(model, k) for k in ENGINE}
    plan = compile_plan(model, _specs(), require_match=True)
    for key in ENGINE:
        entry = plan.entries[key]
        assert entry.node.kind == "engine" and entry.adopted
        assert entry.storage is engine_objects[key]
        qm_held, experts_held = _holders(model, key)
        assert qm_held is experts_held is engine_objects[key]  # the alias is kept
    ops = {row["node"]: row["op"] for row in plan.rows()}
    assert {ops[key] for key in ENGINE} == {"engine-computed"}


def test_refill_copies_the_engines_fresh_values_into_the_startup_storage():
    model = build_w4a8_model()
    plan = compile_plan(model, _specs())
    startup = {k: (plan.entries[k].storage, plan.entries[k].startup_ptr) for k in ENGINE}
    # a simulated engine post-load: new objects with new values at both holders
    fresh = {}
    for key in ENGINE:
        i, name = key.split(".")[1], key.rsplit(".", 1)[1]
        value = get_path(model, key) * 10 + 3
        fresh[key] = value
        setattr(get_path(model, QM.format(i=i)), name, value)
        setattr(get_path(model, FE.format(i=i)), name, value)
    assert set(plan.moved()) >= set(ENGINE)
    report = plan.refill(verify=True)
    assert report.moved == []
    for key, (obj, ptr) in startup.items():
        qm_held, experts_held = _holders(model, key)
        assert qm_held is experts_held is obj and obj.data_ptr() == ptr
        assert torch.equal(obj, fresh[key]) and not torch.equal(obj, fresh[key] - 3)


def test_refill_after_the_real_post_load_step_a_b_a():
    model = build_w4a8_model(seed=0)
    plan = compile_plan(model, _specs())
    startup = {k: plan.entries[k].storage for k in plan.entries}
    for seed in (1, 0):
        model.load_weights(make_w4a8_weights(model, seed))
        model.process_weights_after_loading()
        assert plan.moved()
        assert plan.refill(verify=True).moved == []
        cold = build_w4a8_model(seed=seed)
        for key, obj in startup.items():
            assert get_path(model, key) is obj
            assert torch.equal(obj, get_path(cold, key)), key


def test_run_refuses_engine_tensors_before_touching_anything():
    model = build_w4a8_model()
    plan = compile_plan(model, _specs())
    a_strides = get_path(model, f"{FE.format(i=0)}.a_strides1")
    a_strides.fill_(-1)  # a stale value run() would overwrite if it ran
    with pytest.raises(EngineComputedError) as info:
        plan.run()
    text = str(info.value)
    assert "layers.0.quant_method.b_strides1 is engine-computed: call refill() after the " \
           "engine's post-load step, or register an op that computes it" in text
    assert {i.rule for i in info.value.issues} == {Rule.ENGINE_VALUE}
    assert len(info.value.issues) == len(ENGINE)
    assert (a_strides == -1).all()  # nothing was written
    with pytest.raises(EngineComputedError) as info:
        plan.run(updated=["layers.1.w2_weight"])  # a load into that module
    assert [i.node for i in info.value.issues] == ENGINE[2:]
    # a kernel-format load elsewhere does not need them
    report = plan.run(updated=["lm_head.weight"])
    assert report.written == 0


def test_run_recomputes_when_an_op_is_registered():
    register_op("w4a8_layout_strides", w4a8_layout_strides)
    try:
        text = """
version: 1
specs:
  - name: b-strides-with-op
    target: {module_class: [RoutedExperts], object: quant_method.moe_kernel.fused_experts}
    derived:
      - {name: b_strides1, owner: quant_method, kind: engine,
         formula: "w4a8_layout_strides(w13_weight)"}
"""
        model = build_w4a8_model()
        plan = compile_plan(model, load_spec_text(text, "op.yaml"))
        key = "layers.0.quant_method.b_strides1"
        entry = plan.entries[key]
        assert entry.adopted and entry.node.input is not None
        entry.storage.zero_()
        report = plan.run(verify=True)
        assert report.moved == [] and report.written == 2
        assert torch.equal(entry.storage, w4a8_layout_strides(model.layers[0].w13_weight))
    finally:
        unregister_op("w4a8_layout_strides")
    # without the op the same spec validates and compiles as an opaque engine tensor
    specs = load_spec_text(text, "op.yaml")
    assert validate_specs(specs) == []
    plan = compile_plan(build_w4a8_model(), specs)
    assert plan.entries[key].node.input is None
    with pytest.raises(EngineComputedError):
        plan.run()


def test_a_registered_op_that_disagrees_with_the_engine_is_refused_at_compile():
    register_op("wrong_strides", lambda w: w4a8_layout_strides(w) + 1)
    try:
        text = """
version: 1
specs:
  - name: wrong
    target: {module_class: [RoutedExperts], object: quant_method.moe_kernel.fused_experts}
    derived:
      - {name: b_strides1, owner: quant_method, kind: engine, formula: "wrong_strides(w13_weight)"}
"""
        with pytest.raises(AdoptionError, match="differs from the registered op"):
            compile_plan(build_w4a8_model(), load_spec_text(text, "wrong.yaml"))
    finally:
        unregister_op("wrong_strides")


@pytest.mark.parametrize("extra, message", [
    ("dtype: int32", "dtype torch.int64 (declared int32)"),
    ("shape: [4, 2]", "shape [4, 3] (declared [4, 2])"),
])
def test_declared_layout_must_match_the_engines(extra, message):
    text = f"""
version: 1
specs:
  - name: decl
    target: {{module_class: [RoutedExperts], object: quant_method.moe_kernel.fused_experts}}
    derived:
      - {{name: b_strides1, owner: quant_method, kind: engine, {extra}}}
"""
    with pytest.raises(AdoptionError) as info:
        compile_plan(build_w4a8_model(), load_spec_text(text, "decl.yaml"))
    assert message in str(info.value) and info.value.issues[0].rule == Rule.ENGINE_VALUE


def test_an_engine_tensor_missing_at_compile_is_an_error():
    model = build_w4a8_model()
    del model.layers[0].quant_method.b_strides1
    text = """
version: 1
specs:
  - name: missing
    target: {module_class: [RoutedExperts], object: quant_method.moe_kernel.fused_experts}
    derived:
      - {name: b_strides1, owner: quant_method, kind: engine}
"""
    with pytest.raises(AdoptionError, match="engine holds nothing there"):
        compile_plan(model, load_spec_text(text, "missing.yaml"))


def test_refill_refuses_a_fresh_value_with_another_layout():
    model = build_w4a8_model()
    plan = compile_plan(model, _specs())
    qm = model.layers[0].quant_method
    qm.b_strides1 = torch.zeros(4, 5, dtype=torch.int64)
    with pytest.raises(EngineComputedError, match="cannot be copied into the startup tensor"):
        plan.refill()
