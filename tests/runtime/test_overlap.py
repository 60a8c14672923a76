"""The captured run launches the recording before its host checks (the overlap on CUDA).

A full ``plan.run()`` of a captured plan replays first and checks sources, startup storage and
holders while the device works. That is only safe because the recording keeps every storage it
reads alive and writes no source: a moved source must still end in a correct run (wait, then
eager) and a changed one in the same refusal as without the overlap. Each case runs on CPU
(``overlap_checks`` forced on: the dispatch recording replays like a CUDA graph, over the
startup storages) and on CUDA (``pytest -m gpu``, where the overlap is the default).
"""

from __future__ import annotations

import dataclasses

import pytest
import torch
from torch import nn

from derivgraph import DerivedTensor, Spec, Target, compile_plan
from derivgraph.errors import PassFault, SourceChanged
from derivgraph.runtime.replay import WriteRecorder

DEVICES = ["cpu", pytest.param("cuda", marks=pytest.mark.gpu)]


class Layer(nn.Module):
    def __init__(self, device: str, seed: int = 0) -> None:
        super().__init__()
        g = torch.Generator().manual_seed(seed)
        self.scale = nn.Parameter((0.5 + torch.rand(6, generator=g)).to(device),
                                  requires_grad=False)
        self.weight = nn.Parameter(torch.randn(6, 4, generator=g).to(device),
                                   requires_grad=False)

    def load(self, seed: int) -> None:
        fresh = Layer(self.scale.device.type, seed)
        with torch.no_grad():
            self.scale.copy_(fresh.scale)
            self.weight.copy_(fresh.weight)


SPEC = Spec(name="layer", target=Target(module_class=["Layer"]), derived=[
    DerivedTensor(name="inv", kind="parameter", formula="1.0 / scale"),
    DerivedTensor(name="wt", kind="attribute", formula="contiguous(t(weight)) * 2.0"),
])


def _captured(device: str, overlap: bool = True) -> tuple[nn.Module, object]:
    model = nn.Sequential(Layer(device), Layer(device, 1))
    plan = compile_plan(model, [SPEC])
    plan.overlap_checks = overlap
    plan.capture()
    return model, plan


def _sync(device: str) -> None:
    if device == "cuda":
        torch.cuda.synchronize()


def _assert_current(model: nn.Module) -> None:
    for layer in model:
        assert torch.equal(layer.inv, 1.0 / layer.scale)
        assert torch.equal(layer.wt, layer.weight.t().contiguous() * 2.0)


def _order(plan, monkeypatch) -> list[str]:  # noqa: ANN001
    calls: list[str] = []
    replay, intact = plan._recording.replay, plan.holders.sources_intact
    monkeypatch.setattr(plan._recording, "replay", lambda: (calls.append("replay"), replay())[1])
    monkeypatch.setattr(plan.holders, "sources_intact",
                        lambda *a: (calls.append("check"), intact(*a))[1])
    return calls


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("overlap", [True, False], ids=["overlap", "serial"])
def test_captured_run_replays_before_or_after_its_checks(device, overlap, monkeypatch):
    model, plan = _captured(device, overlap)
    calls = _order(plan, monkeypatch)
    startup = {k: (e.storage, e.startup_ptr) for k, e in plan.entries.items()}
    for seed in (3, 4, 3):
        for i, layer in enumerate(model):
            layer.load(seed * 10 + i)
        report = plan.run()
        _sync(device)
        assert report.replayed and report.written == 4
        _assert_current(model)
    assert calls == (["replay", "check"] if overlap else ["check", "replay"]) * 3
    assert plan.moved() == []
    for key, (obj, ptr) in startup.items():
        assert plan.entries[key].storage is obj and obj.data_ptr() == ptr
    assert plan.source().count("run() launched the captured pass") == int(overlap)


@pytest.mark.parametrize("device", DEVICES)
def test_the_recording_keeps_every_storage_it_reads(device):
    model, plan = _captured(device)
    kept = {s.data_ptr() for s in plan._keep}
    for layer in model:
        for t in (layer.scale, layer.weight, layer.inv, layer.wt):
            assert t.untyped_storage().data_ptr() in kept


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("how", ["new object", "data swapped"])
def test_a_moved_source_under_the_launch_still_ends_correct(device, how):
    """The canary: the replay already ran against the startup source; the check then fails,
    and the run waits and recomputes eagerly from the moved source."""
    model, plan = _captured(device)
    old = model[0].scale
    old_ptr = old.untyped_storage().data_ptr()
    assert old_ptr in {s.data_ptr() for s in plan._keep}
    fresh = torch.full_like(old, 4.0)
    if how == "new object":
        model[0].scale = nn.Parameter(fresh, requires_grad=False)
        del old
    else:
        model[0].scale.data = fresh
    filler = [torch.full((6,), 9.0, device=device) for _ in range(8)]  # reuse of freed memory
    report = plan.run(verify=True)
    _sync(device)
    assert not report.replayed and not plan.captured  # ran eagerly; recapture required
    assert "0.scale (moved: graph recapture required)" in report.recapture_required
    assert report.written == 4 and report.moved == ["0.scale"]  # against compile time
    assert torch.equal(model[0].inv, torch.full_like(fresh, 0.25))
    _assert_current(model)
    assert all(torch.equal(f, torch.full_like(f, 9.0)) for f in filler)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("overlap", [True, False], ids=["overlap", "serial"])
def test_a_changed_source_is_refused_as_without_the_launch(device, overlap):
    model, plan = _captured(device, overlap)
    model[1].weight.data = torch.zeros(5, 4, device=device)
    with pytest.raises(SourceChanged) as err:
        plan.run()
    assert err.value.paths == ["1.weight"]


@pytest.mark.parametrize("device", DEVICES)
def test_derived_storage_the_engine_re_pointed_is_restored_after_the_launch(device):
    model, plan = _captured(device)
    inv = model[1].inv
    startup_ptr = inv.data_ptr()
    inv.data = torch.zeros(6, device=device)  # the engine's `t.data = new`
    model[1].load(7)
    report = plan.run(verify=True)
    _sync(device)
    assert report.replayed and report.restored == ["1.inv"] and report.moved == []
    assert model[1].inv is inv and inv.data_ptr() == startup_ptr
    _assert_current(model)


@pytest.mark.parametrize("device", DEVICES)
def test_the_pass_writes_only_derived_storage(device):
    model, plan = _captured(device)
    writes = WriteRecorder()
    with torch.no_grad(), writes:
        plan.program.fn()
    derived = {e.storage.untyped_storage().data_ptr() for e in plan.entries.values()}
    sources = {t.untyped_storage().data_ptr() for t in plan.tensors.sources.values()}
    assert writes.written == derived and not writes.written & sources


@pytest.mark.parametrize("device", DEVICES)
def test_capture_refuses_a_pass_that_writes_a_source(device):
    """The canary of the check above: a planted in-place write into a source."""
    model, plan = _captured(device)
    good = plan.program

    def bad() -> None:
        good.fn()
        model[1].scale.mul_(1.0)

    plan.programs.program = dataclasses.replace(good, fn=bad)
    with pytest.raises(PassFault, match=r"writes the source\(s\) 1\.scale"):
        plan.capture()
    assert not plan.captured or plan._recording is None
