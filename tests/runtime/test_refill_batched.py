"""The batched refill: precompiled holder accessors, one ``_foreach_copy_``, dict stores.

The oracle: after the engine's post-load step rebuilt every derived tensor, ``plan.refill()``
leaves every holder at its startup object and address (0 moved) and every value bit-exact with
a cold start of the same weights, A -> B -> A with different weights. The batched path must not
walk holders per entry when nothing but the holders changed; whatever it cannot prove (an
owner rebuilt, a holder moved to another registry, another layout) goes to the per-entry path,
which the canaries below exercise.
"""

from __future__ import annotations

from typing import Any

import pytest
import torch
from torch import nn

from derivgraph import DerivedTensor, Spec, Target, compile_plan
from derivgraph.errors import EngineComputedError
from derivgraph.runtime.engine import Layouts, RefillTable, Taken, _picker
from derivgraph.tools.deepseek_workload import DeepseekModel, deepseek_specs
from tests.toy import SeededStack, Toy


class Layer(nn.Module):
    """A layer whose post-load step rebuilds a parameter, a buffer and two attributes."""

    def __init__(self, seed: int = 0) -> None:
        super().__init__()
        g = torch.Generator().manual_seed(seed)
        self.scale = nn.Parameter(0.5 + torch.rand(6, generator=g), requires_grad=False)
        self.weight = nn.Parameter(torch.randn(6, 4, generator=g), requires_grad=False)

    def post_load(self) -> None:
        self.inv = nn.Parameter(1.0 / self.scale, requires_grad=False)
        self.register_buffer("sq", self.scale * self.scale, persistent=False)
        self.wt = self.weight.t().contiguous()
        self.strides = torch.full((6,), 4, dtype=torch.int64)

    def load(self, seed: int) -> None:
        fresh = Layer(seed)
        with torch.no_grad():
            self.scale.copy_(fresh.scale)
            self.weight.copy_(fresh.weight)


class Stack(SeededStack):
    def __init__(self, n: int = 4) -> None:
        super().__init__(Layer, n)


SPEC = Spec(name="layer", target=Target(module_class=["Layer"]), derived=[
    DerivedTensor(name="inv", kind="parameter", formula="1.0 / scale"),
    DerivedTensor(name="sq", kind="buffer", formula="scale * scale"),
    DerivedTensor(name="wt", kind="attribute", formula="contiguous(t(weight))"),
    DerivedTensor(name="strides", kind="attribute", formula="full([6], 4, dtype=int64)"),
])
PATHS = ("inv", "sq", "wt", "strides")


def _stack(seed: int) -> Stack:
    model = Stack()
    model.load(seed)
    model.post_load()
    return model


def _check_against_cold(model: Stack, startup: dict[str, torch.Tensor], seed: int) -> None:
    cold = _stack(seed)
    for i, (layer, ref) in enumerate(zip(model.layers, cold.layers)):
        for name in PATHS:
            key = f"layers.{i}.{name}"
            held = getattr(layer, name)
            assert held is startup[key], key
            assert held.dtype == getattr(ref, name).dtype
            assert torch.equal(held, getattr(ref, name)), key  # bit-exact


def test_refill_a_b_a_is_bit_exact_and_walks_no_holder(per_entry_spy):
    model = _stack(0)
    plan = compile_plan(model, [SPEC])
    startup = {k: e.storage for k, e in plan.entries.items()}
    ptrs = {k: t.data_ptr() for k, t in startup.items()}
    plan.refill()  # the first refill may resolve the accessors
    per_entry_spy.clear()
    for seed in (1, 0, 1):  # A -> B -> A -> B, different weights every time
        model.load(seed)
        model.post_load()  # the engine's naive step: every holder rebuilt
        assert model.layers[0].inv is not startup["layers.0.inv"]
        report = plan.refill(verify=True)
        assert report.moved == [] and report.missing_owners == []
        assert report.taken_from_engine == 16 and report.rebinds == 16
        assert report.bytes == sum(t.numel() * t.element_size() for t in startup.values())
        _check_against_cold(model, startup, seed)
        assert {k: t.data_ptr() for k, t in startup.items()} == ptrs
    assert per_entry_spy == []  # the batched path: no per-entry walk
    layer = model.layers[2]
    assert "inv" in layer._parameters and "sq" in layer._buffers
    assert "sq" in layer._non_persistent_buffers_set and "wt" in layer.__dict__


def _compiled_and_refilled(spy: list[str]) -> tuple[Stack, Any, dict[str, torch.Tensor]]:
    """A compiled stack after one refill (accessors resolved), with the spy cleared."""
    model = _stack(0)
    plan = compile_plan(model, [SPEC])
    startup = {k: e.storage for k, e in plan.entries.items()}
    plan.refill()
    spy.clear()
    return model, plan, startup


def test_refill_when_the_engine_rebuilt_only_some_holders(per_entry_spy):
    model, plan, startup = _compiled_and_refilled(per_entry_spy)
    model.load(1)
    model.layers[1].post_load()  # one layer's step ran; the others still hold our tensors
    report = plan.refill(verify=True)
    assert report.taken_from_engine == 4 and report.rebinds == 4 and report.moved == []
    assert per_entry_spy == []
    # the layers whose step did not run are recomputed from their (new) sources
    _check_against_cold(model, startup, 1)


#: the Toy's kernel, rebuilt by every post-load step, and the descriptor under it
KERNEL_SPEC = Spec(name="k", target=Target(module_class=["Toy"], object="kernel"),
                   params={"E": "weight.shape[0]", "C": "weight.shape[1]"}, derived=[
                       DerivedTensor(name="strides", kind="attribute", owner="kernel",
                                     formula="full([E], C, dtype=int64)"),
                       DerivedTensor(name="gscale", kind="attribute", owner="kernel.desc",
                                     formula="1.0 / scale")])


def test_an_owner_rebuilt_is_re_walked_under_it_only(per_entry_spy):
    model = Toy()
    model.post_load()
    plan = compile_plan(model, [KERNEL_SPEC])
    startup = {k: e.storage for k, e in plan.entries.items()}
    for seed in (5, 6):
        model.load(seed)
        old = model.kernel
        model.post_load()  # a new kernel object (and descriptor) on the way to the holders
        per_entry_spy.clear()
        report = plan.refill(verify=True)
        assert report.moved == [] and report.taken_from_engine == 2
        assert per_entry_spy == []  # the hops under the new kernel were re-walked, no more
        assert model.kernel.strides is startup["kernel.strides"]
        assert model.kernel.desc.gscale is startup["kernel.desc.gscale"]
        assert old.desc.gscale is startup["kernel.desc.gscale"]
        assert torch.equal(startup["kernel.desc.gscale"], 1.0 / model.scale)


def test_a_holder_moved_to_another_registry_is_bound_back_in_its_slot(per_entry_spy):
    model, plan, startup = _compiled_and_refilled(per_entry_spy)
    model.load(1)
    model.post_load()
    layer = model.layers[0]
    del layer.inv  # the engine now keeps `inv` as a plain attribute, not a parameter
    layer.inv = (1.0 / layer.scale).clone()
    assert "inv" not in layer._parameters and "inv" in layer.__dict__
    report = plan.refill(verify=True)
    assert report.moved == []
    assert "inv" in layer._parameters and "inv" not in layer.__dict__  # set_slot's semantics
    assert layer.inv is startup["layers.0.inv"]
    assert "layers.0.inv" in per_entry_spy  # this one holder took the per-entry path
    _check_against_cold(model, startup, 1)


def test_another_layout_is_refused_before_any_copy():
    model = _stack(0)
    spec = Spec(name="eng", target=Target(module_class=["Layer"]), derived=[
        DerivedTensor(name="strides", kind="engine")])
    plan = compile_plan(model, [spec])
    startup = {k: e.storage.clone() for k, e in plan.entries.items()}
    model.layers[1].strides = torch.full((7,), 4, dtype=torch.int64)  # a new layout
    model.layers[0].strides = torch.full((6,), 9, dtype=torch.int64)
    with pytest.raises(EngineComputedError):
        plan.refill()
    for key, entry in plan.entries.items():  # nothing was copied
        assert torch.equal(entry.storage, startup[key])


def test_moved_reports_a_holder_the_engine_rebuilt_after_the_refill():
    model = _stack(0)
    plan = compile_plan(model, [SPEC])
    model.post_load()
    assert plan.refill(verify=True).moved == []
    model.layers[2].wt = model.layers[2].wt.clone()
    assert plan.moved() == ["layers.2.wt"]
    with torch.no_grad():
        model.layers[1].sq.data = torch.zeros(6)  # same object, another address
    assert plan.moved() == ["layers.1.sq", "layers.2.wt"]


def test_deepseek_workload_refill_matches_a_cold_start(per_entry_spy):
    model = DeepseekModel("cpu", 1 / 256, layers=4, experts=16)
    model.reload(0)
    model.post_load()
    plan = compile_plan(model, deepseek_specs())
    startup = {k: e.storage for k, e in plan.entries.items()}
    plan.refill()
    per_entry_spy.clear()
    for seed in (1, 0, 1):
        model.reload(seed)
        model.post_load()
        report = plan.refill(verify=True)
        assert report.moved == [] and report.taken_from_engine == len(startup)
        cold = DeepseekModel("cpu", 1 / 256, layers=4, experts=16)
        cold.reload(seed)
        cold.post_load()
        for key, tensor in startup.items():
            owner, _, name = key.rpartition(".")
            assert model.get_submodule(owner).__dict__[name] is tensor
            assert torch.equal(tensor, getattr(cold.get_submodule(owner), name)), key
    assert per_entry_spy == []


@pytest.mark.parametrize("layout", ["dtype", "shape", "meta", "ndim", "transposed"])
def test_a_fresh_value_of_another_layout_is_not_copied_on_the_fast_path(per_entry_spy, layout):
    model, plan, startup = _compiled_and_refilled(per_entry_spy)
    model.load(1)
    model.post_load()
    layer = model.layers[3]
    # the engine's fresh value has another layout; its values are wrong on purpose: copying it
    # would leave zeros where the formula gives the right value ("ndim": the same numel in
    # [1, 6]; "transposed": `wt` [6, 4] for [4, 6], the same numel and ndim)
    name, wrong = {"dtype": ("inv", torch.zeros(6, dtype=torch.float64)),
                   "shape": ("inv", torch.zeros(1)), "ndim": ("inv", torch.zeros(1, 6)),
                   "meta": ("inv", torch.empty(6, device="meta")),
                   "transposed": ("wt", torch.zeros(6, 4))}[layout]
    if name == "inv":
        layer._parameters["inv"] = nn.Parameter(wrong, requires_grad=False)
    else:
        layer.wt = wrong
    report = plan.refill(verify=True)
    assert f"layers.3.{name}" in per_entry_spy  # the batched read declined; the reference did
    assert report.moved == [] and getattr(layer, name) is startup[f"layers.3.{name}"]
    _check_against_cold(model, startup, 1)  # recomputed from its formula, not the engine's


def test_canary_without_the_layout_check_the_wrong_value_is_copied(monkeypatch):
    model = _stack(0)
    plan = compile_plan(model, [SPEC])
    startup = {k: e.storage for k, e in plan.entries.items()}
    plan.refill()
    monkeypatch.setattr(RefillTable, "take", _take_unchecked)
    model.load(1)
    model.post_load()
    model.layers[3]._parameters["inv"] = nn.Parameter(torch.zeros(6, dtype=torch.float64),
                                                      requires_grad=False)
    plan.refill()
    assert torch.equal(startup["layers.3.inv"], torch.zeros(6))  # red: the engine's zeros


def _take_unchecked(self: RefillTable, current: list[Any]) -> Taken:
    """The fast read without its shape, dtype and meta sweeps (the canary's planted bug)."""
    picked = [current[i] for i in self.index]
    return Taken(list(self.storages), picked, (True,) * len(picked), sum(self.nbytes),
                 any(self.is_constant), self.spans)


def test_canary_without_the_shape_sweep_of_multi_dim_targets_a_transposed_value_is_copied(
        monkeypatch):
    """(numel, ndim) decide only shapes of ndim <= 1: a fast check that stopped there hands a
    transposed fresh value of the same numel to the copy, which fails mid-refill (red) instead
    of the per-entry path recomputing it."""
    model = _stack(0)
    plan = compile_plan(model, [SPEC])
    startup = {k: e.storage for k, e in plan.entries.items()}
    plan.refill()

    def sizes_only(self: Layouts, theirs: list[Any]) -> bool:
        return [t.dtype for t in theirs] == self.dtypes \
            and [(t.numel(), t.dim()) for t in theirs] == \
            [(s.numel(), len(s)) for s in self.shapes]

    monkeypatch.setattr(Layouts, "match", sizes_only)
    model.load(1)
    model.post_load()
    model.layers[3].wt = torch.zeros(6, 4)
    with pytest.raises(RuntimeError, match="must match the size"):  # red: a broken refill
        plan.refill()
    assert model.layers[3].wt is not startup["layers.3.wt"]  # and its holders not re-bound


def test_a_failed_refill_leaves_no_holder_read_for_the_next_run(monkeypatch):
    """The read a refill's rebind reuses belongs to that run only: a refill that fails after
    the read, then a rebuild, then a plain run re-binds every rebuilt holder."""
    model, plan, startup = _compiled_and_refilled([])
    model.load(1)
    model.layers[1].post_load()  # one layer rebuilt: the others are recomputed by the pass
    execute = plan.bindings["execute"]  # what the generated refill calls after the read

    def failing(fn: Any, report: Any) -> None:
        raise RuntimeError("a planted failure after the holder read")

    monkeypatch.setitem(plan.bindings, "execute", failing)
    with pytest.raises(RuntimeError, match="planted"):
        plan.refill()
    monkeypatch.setitem(plan.bindings, "execute", execute)
    model.layers[2].post_load()  # rebuilt after the read the failed refill made
    report = plan.run(verify=True)
    assert report.moved == []
    assert model.layers[2].inv is startup["layers.2.inv"]
    assert model.layers[1].inv is startup["layers.1.inv"]


def test_a_scalar_the_engine_rewrote_is_put_back_and_equal_ones_are_not_walked(per_entry_spy):
    model = Toy()
    spec = Spec(name="s", target=Target(module_class=["Toy"]), derived=[
        DerivedTensor(name="inv", kind="attribute", formula="1.0 / scale"),
        DerivedTensor(name="scale_max", kind="scalar", formula="amax(scale)")])
    plan = compile_plan(model, [spec])
    plan.run()
    kept = model.inv
    model.inv = model.inv.clone()  # a tensor holder rebuilt: the rebind runs
    model.scale_max = float(model.scale_max)  # an equal number in a new object
    per_entry_spy.clear()
    assert plan.rebind() == 1 and model.inv is kept
    assert per_entry_spy == []  # the equal scalar was checked in the sweep, not walked
    model.inv = model.inv.clone()
    model.scale_max = 123.0  # the engine wrote another number
    assert plan.rebind() == 2
    assert model.scale_max == plan.entries["scale_max"].storage != 123.0
    assert "scale_max" in per_entry_spy


def test_the_precomputed_pick_of_refill_targets():
    values = ["a", "b", "c"]
    assert _picker([0, 1, 2], 3) is None  # the targets are the table, in its order
    assert _picker([], 3)(values) == []  # no target is a dict store (the per-entry path)
    assert _picker([1], 3)(values) == ["b"]
    assert _picker([2, 0], 3)(values) == ["c", "a"]
