"""Per-spec isolation: a model mixing a good and a bad class keeps the good plan; the guard keeps
the bad spec's tensors; strict still refuses."""

from __future__ import annotations

import logging

import pytest
import torch
from torch import nn

from derivgraph import compile_plan, load_spec_text
from derivgraph.errors import AdoptionError, DerivgraphError, Rule
from derivgraph.guard import Guard
from derivgraph.isolation import compile_isolated


class Kernel:
    def __init__(self, w: torch.Tensor):
        self.strides = torch.full((w.shape[0],), w.shape[1], dtype=torch.int64)
        self.inv = 1.0 / w.abs().sum(1)


class GoodLayer(nn.Module):
    def __init__(self, seed: int):
        super().__init__()
        g = torch.Generator().manual_seed(seed)
        self.weight = nn.Parameter(torch.randn(4, 3, generator=g), requires_grad=False)
        self.kernel = Kernel(self.weight)

    def post_load(self) -> None:
        self.kernel = Kernel(self.weight)


class BadLayer(GoodLayer):
    """A neighbour whose spec does not match what the engine computes."""


class Mixed(nn.Module):
    def __init__(self):
        super().__init__()
        self.layers = nn.ModuleList([GoodLayer(0), BadLayer(1), GoodLayer(2)])

    def post_load(self) -> None:
        for layer in self.layers:
            layer.post_load()


SPECS = """
version: 1
specs:
  - name: good-strides
    target: {module_class: [GoodLayer]}
    params:
      R: "weight.shape[0]"
      C: "weight.shape[1]"
    derived:
      - {name: strides, owner: kernel, kind: attribute, formula: "full([R], C, dtype=int64)",
         dtype: int64, shape: [R]}
  - name: bad-inverse
    target: {module_class: [BadLayer]}
    derived:
      - {name: inv, owner: kernel, kind: attribute, formula: "2.0 / sum(abs(weight), 1)"}
"""


def _specs():
    return load_spec_text(SPECS, "mixed.yaml")


def test_canary_the_bad_spec_fails_the_whole_compile():
    with pytest.raises(AdoptionError):
        compile_plan(Mixed(), _specs())


def test_mixed_model_keeps_the_good_plan(caplog):
    model = Mixed()
    with caplog.at_level(logging.ERROR, logger="vllm.derivgraph"):
        plan, dropped = compile_isolated(model, _specs())
    assert [d.spec for d in dropped] == ["bad-inverse"]
    assert dropped[0].rule is Rule.ADOPTION and dropped[0].classes == ("BadLayer",)
    assert "mixed.yaml:" in dropped[0].location
    logged = caplog.text
    assert "bad-inverse" in logged and "BadLayer" in logged and "DG011" in logged
    declared = plan.declared()
    assert "layers.0.kernel.strides" in declared and "layers.2.kernel.strides" in declared
    assert not any(k.endswith("kernel.inv") for k in declared)


def test_guard_covers_the_dropped_specs_tensors():
    model = Mixed()
    plan, dropped = compile_isolated(model, _specs())
    guard = Guard()
    snap = guard.snapshot(model, declared=plan.declared().values())
    assert "layers.1.kernel.inv" in snap.guarded
    assert "layers.0.kernel.strides" not in snap.guarded  # the plan keeps it
    good = model.layers[0].kernel.strides
    bad = model.layers[1].kernel.inv
    with torch.no_grad():
        model.layers[1].weight.mul_(2.0)  # a reload with other weights
    model.post_load()
    plan.refill()
    report = guard.restore(model, declared=plan.declared().values())
    assert report.ok, report.recapture
    assert model.layers[0].kernel.strides is good
    assert model.layers[1].kernel.inv is bad
    torch.testing.assert_close(bad, 1.0 / model.layers[1].weight.abs().sum(1))


def test_strict_still_refuses():
    with pytest.raises(AdoptionError):
        compile_isolated(Mixed(), _specs(), strict=True)


def test_specs_built_in_python_are_singled_out_by_probing():
    specs = _specs()
    for s in specs:  # no file and line: the probe compiles each spec alone
        s._location = type(s.location)()
        for d in s.derived:
            d._location = type(d.location)()
    plan, dropped = compile_isolated(Mixed(), specs)
    assert [d.spec for d in dropped] == ["bad-inverse"]
    assert sorted(plan.declared()) == [f"layers.{i}.kernel.strides" for i in range(3)]


def test_an_error_no_spec_explains_is_raised():
    class Boom(DerivgraphError):
        pass

    calls = []

    def failing(model, specs, **_):
        calls.append(len(specs))
        raise Boom("no spec to blame")

    import derivgraph.planner as planner

    mp = pytest.MonkeyPatch()
    mp.setattr(planner, "compile_plan", failing)
    try:
        with pytest.raises(DerivgraphError):
            compile_isolated(Mixed(), _specs())
    finally:
        mp.undo()
    assert calls[0] == 2
