"""Guard mode: every census hiding place is brought back to its startup storage after a rerun
post-load step, and what cannot be is reported (strict raises)."""

from __future__ import annotations

import functools
from dataclasses import dataclass

import pytest
import torch
from torch import nn

from derivgraph.errors import RecaptureRequired, Rule
from derivgraph.guard import Change, Guard


@pytest.fixture(params=[False, True], ids=["resolved", "full-walk"], autouse=True)
def full(request, monkeypatch):
    """Every test runs with the default restore (chains + rebuilt objects) and the full walk."""
    restore = Guard.restore
    monkeypatch.setattr(Guard, "restore",
                        lambda self, model, **kw: restore(self, model, full=request.param, **kw))
    return request.param


@dataclass(frozen=True)
class Desc:
    scale: torch.Tensor
    bias: torch.Tensor | None = None


class Kernel:
    """Rebuilt by every post-load step, like vLLM's experts and linear kernels."""

    def __init__(self, w: torch.Tensor):
        self.workspace = w.sum(0) * 2                               # attribute
        self.strides = [torch.full((2,), w.shape[1]), w[0] + 1]     # list
        self.table = {"perm": torch.argsort(w[:, 0]), 3: w[1] * 3}  # dict, two key kinds
        self.pair = (w[:, 1].clone(), 7)                            # tuple item
        self.desc = Desc(scale=w.abs().amax(1))                     # nested frozen dataclass
        act = w[:, 2].clone()
        self.apply = lambda x: x * act                              # closure cell
        self.gemm = functools.partial(torch.mul, w.mean(1), other=w.std(1))  # partial


class Layer(nn.Module):
    def __init__(self, seed: int = 0):
        super().__init__()
        g = torch.Generator().manual_seed(seed)
        self.weight = nn.Parameter(torch.randn(4, 3, generator=g), requires_grad=False)
        self.kernel: Kernel | None = None

    def post_load(self) -> None:
        self.kernel = Kernel(self.weight)
        self.register_buffer("inv", 1.0 / self.weight.abs().sum(1), persistent=False)
        self.weight_t = self.weight.t()  # a view of the weight

    def load(self, seed: int) -> None:
        with torch.no_grad():
            self.weight.copy_(Layer(seed).weight)


def _startup(layer: Layer) -> tuple[Guard, dict[str, torch.Tensor]]:
    layer.post_load()
    guard = Guard()
    guard.snapshot(layer)
    k = layer.kernel
    kept = {"attribute": k.workspace, "list": k.strides[1], "dict": k.table["perm"],
            "dict-int": k.table[3], "tuple": k.pair[0], "nested": k.desc.scale,
            "closure": k.apply.__closure__[0].cell_contents, "partial": k.gemm.args[0],
            "partial-kw": k.gemm.keywords["other"], "buffer": layer.inv}
    return guard, {name: t for name, t in kept.items()}


def _current(layer: Layer) -> dict[str, torch.Tensor]:
    k = layer.kernel
    return {"attribute": k.workspace, "list": k.strides[1], "dict": k.table["perm"],
            "dict-int": k.table[3], "tuple": k.pair[0], "nested": k.desc.scale,
            "closure": k.apply.__closure__[0].cell_contents, "partial": k.gemm.args[0],
            "partial-kw": k.gemm.keywords["other"], "buffer": layer.inv}


def _reload(layer: Layer, seed: int) -> dict[str, torch.Tensor]:
    layer.load(seed)
    layer.post_load()
    return {n: t.clone() for n, t in _current(layer).items()}


def test_guard_lists_guarded_slots_but_not_weights():
    layer = Layer()
    layer.post_load()
    guard = Guard()
    report = guard.snapshot(layer)
    assert "kernel.workspace" in report.guarded
    assert "kernel.apply.closure.act" in report.guarded
    assert "kernel.gemm.partial.args[0]" in report.guarded
    assert "inv" in report.guarded
    assert "weight" not in report.guarded and "weight_t" not in report.guarded
    assert report.weights == 2  # the weight and its transposed view


@pytest.mark.parametrize("kind", ["attribute", "list", "dict", "dict-int", "nested", "closure",
                                  "partial", "partial-kw", "buffer"])
def test_each_census_kind_is_restored_in_place(kind):
    layer = Layer()
    guard, kept = _startup(layer)
    startup_ptr = kept[kind].data_ptr()
    fresh = _reload(layer, seed=1)
    assert _current(layer)[kind] is not kept[kind]  # the engine rebound it
    assert not torch.equal(fresh[kind], kept[kind]) or kind == "list"
    report = guard.restore(layer)
    assert report.ok, report.recapture
    now = _current(layer)[kind]
    assert now is kept[kind] and now.data_ptr() == startup_ptr
    torch.testing.assert_close(now, fresh[kind], rtol=0, atol=0)


def test_non_persistent_buffer_keeps_its_persistence():
    layer = Layer()
    guard, kept = _startup(layer)
    _reload(layer, seed=2)
    guard.restore(layer)
    assert layer._buffers["inv"] is kept["buffer"]
    assert "inv" in layer._non_persistent_buffers_set
    assert "inv" not in layer.state_dict()


def test_tuple_item_is_copied_and_reported():
    layer = Layer()
    guard, kept = _startup(layer)
    fresh = _reload(layer, seed=3)
    report = guard.restore(layer)
    torch.testing.assert_close(kept["tuple"], fresh["tuple"], rtol=0, atol=0)
    fixed = [c for c in report.copied_only if c.path == "kernel.pair[0]"]
    assert fixed and fixed[0].change is Change.FIXED_HOLDER
    assert report.ok


def test_closure_reads_new_values_through_startup_storage():
    layer = Layer()
    guard, kept = _startup(layer)
    _reload(layer, seed=4)
    guard.restore(layer)
    x = torch.ones(4)
    torch.testing.assert_close(layer.kernel.apply(x), layer.weight[:, 2], rtol=0, atol=0)
    assert layer.kernel.apply.__closure__[0].cell_contents.data_ptr() == \
        kept["closure"].data_ptr()


def test_storage_rebound_in_place_is_restored():
    layer = Layer()
    guard, kept = _startup(layer)
    ptr = kept["attribute"].data_ptr()
    kept["attribute"].data = torch.full_like(kept["attribute"], 5.0)  # `.data =` rebind
    report = guard.restore(layer)
    assert [c.change for c in report.restored] == [Change.STORAGE]
    assert layer.kernel.workspace.data_ptr() == ptr
    assert torch.all(layer.kernel.workspace == 5.0)


def test_layout_change_disappeared_and_new_need_recapture():
    layer = Layer()
    guard, _ = _startup(layer)
    layer.post_load()
    layer.kernel.workspace = torch.zeros(5)          # shape changed
    del layer.kernel.table["perm"]                    # disappeared
    layer.kernel.extra = torch.ones(2)                # new
    report = guard.restore(layer)
    got = {(c.path, c.change) for c in report.recapture}
    assert ("kernel.workspace", Change.LAYOUT) in got
    assert ("kernel.table['perm']", Change.DISAPPEARED) in got
    assert ("kernel.extra", Change.NEW) in got
    assert len(report.recapture) == 3


def test_strict_raises_naming_each_slot_before_writing():
    layer = Layer()
    guard, kept = _startup(layer)
    before = kept["nested"].clone()
    _reload(layer, seed=5)
    layer.kernel.workspace = torch.zeros(5, dtype=torch.float64)
    layer.kernel.extra = torch.ones(2)
    with pytest.raises(RecaptureRequired) as info:
        guard.restore(layer, strict=True)
    assert info.value.rule is Rule.RECAPTURE_REQUIRED
    assert any(s.startswith("kernel.workspace:") for s in info.value.slots)
    assert any(s.startswith("kernel.extra:") for s in info.value.slots)
    assert len(info.value.slots) == 2
    torch.testing.assert_close(kept["nested"], before, rtol=0, atol=0)  # nothing written


def test_weight_views_are_never_written():
    layer = Layer()
    guard, _ = _startup(layer)
    weight = layer.weight.detach().clone()
    layer.weight_t = torch.randn(3, 4).t().contiguous().t()  # same layout, other values
    report = guard.restore(layer)
    assert [(c.path, c.change) for c in report.recapture] == [("weight_t", Change.WEIGHT)]
    torch.testing.assert_close(layer.weight, weight, rtol=0, atol=0)


def test_weight_slot_rebound_to_an_equal_copy_is_repointed():
    layer = Layer()
    guard, _ = _startup(layer)
    startup_view = layer.weight_t
    layer.weight_t = layer.weight.detach().clone().t()  # like a quant config left on a temporary
    report = guard.restore(layer)
    assert report.ok
    assert layer.weight_t is startup_view
    assert [c.change for c in report.restored] == [Change.WEIGHT_REPOINTED]


def test_declared_tensors_are_left_to_the_plan():
    layer = Layer()
    layer.post_load()
    guard = Guard()
    report = guard.snapshot(layer, declared=[layer.kernel.workspace])
    assert "kernel.workspace" not in report.guarded
    old = layer.kernel.workspace
    layer.post_load()
    after = guard.restore(layer, declared=[layer.kernel.workspace])
    assert layer.kernel.workspace is not old
    assert all(c.path != "kernel.workspace" for c in [*after.restored, *after.recapture])


def test_canary_without_guard_the_rebuild_moves_every_slot():
    """The fixture really rebinds: without restore, no slot stays at its startup storage."""
    layer = Layer()
    _, kept = _startup(layer)
    _reload(layer, seed=6)
    now = _current(layer)
    assert all(now[k] is not kept[k] for k in kept)
