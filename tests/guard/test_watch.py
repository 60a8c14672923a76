"""The guard's precompiled watch: unchanged containers prove nothing moved, changed ones are
diffed, rebuilt objects are descended by template (or walked whole when they do not match)."""

from __future__ import annotations

import pytest
import torch
from torch import nn

from derivgraph.guard import Change, Guard
from derivgraph.guard.watch import NOTHING, Watch
from tests.guard.test_guard import Kernel, Layer, _current, _startup


def test_nothing_changed_is_one_sweep_with_nothing_found():
    layer = Layer()
    guard, _ = _startup(layer)
    survey = guard.watch.survey()
    assert (survey.places, survey.gone, survey.loose, survey.roots) == ([], [], [], [])
    report = guard.restore(layer)
    assert report.ok and report.restored == [] and report.copied_only == []


class _Plain(nn.Module):
    """A module whose tensors are all in dicts (no closure or partial: no opaque node)."""

    def __init__(self) -> None:
        super().__init__()
        self.weight = nn.Parameter(torch.randn(4), requires_grad=False)
        self.inv = torch.ones(4)
        self.table = {"perm": torch.arange(4)}


def test_the_common_reload_s_survey_is_the_shared_empty_one_and_stays_empty():
    """A reload that changed nothing builds no Survey; one that changed something gets its
    own, and the shared empty survey is never written."""
    model = _Plain()
    guard = Guard()
    guard.snapshot(model)
    kept = model.table["perm"]
    assert not guard.watch.opaque and guard.watch.survey() is NOTHING
    model.table["perm"] = torch.arange(4).flip(0)  # same layout, another tensor
    survey = guard.watch.survey()
    assert survey is not NOTHING and [p.slot[1] for p in survey.places] == ["table['perm']"]
    assert [c.path for c in guard.restore(model).restored] == ["table['perm']"]
    assert model.table["perm"] is kept and guard.watch.survey() is NOTHING
    assert (NOTHING.places, NOTHING.gone, NOTHING.loose, NOTHING.roots) == ([], [], [], [])


def test_item_rebound_in_a_kept_dict_is_found_and_restored():
    layer = Layer()
    guard, kept = _startup(layer)
    layer.kernel.table["perm"] = torch.flip(kept["dict"], [0])  # same layout, other storage
    survey = guard.watch.survey()
    assert [p.slot[1] for p in survey.places] == ["kernel.table['perm']"]
    report = guard.restore(layer)
    assert [(c.path, c.change) for c in report.restored] == [
        ("kernel.table['perm']", Change.REBOUND)]
    assert layer.kernel.table["perm"] is kept["dict"]


def test_canary_a_blind_container_check_misses_the_rebound_item(monkeypatch):
    """Planted bug: the sweep reports no changed container; the rebound item stays moved."""
    layer = Layer()
    guard, kept = _startup(layer)
    monkeypatch.setattr(Watch, "_dirty", lambda self: set())
    layer.kernel.table["perm"] = torch.flip(kept["dict"], [0])
    report = guard.restore(layer)
    assert report.restored == [] and layer.kernel.table["perm"] is not kept["dict"]


@pytest.mark.parametrize("where", ["kernel", "module"])
def test_new_tensor_on_a_kept_object_is_found_by_the_default_restore(where):
    layer = Layer()
    guard, _ = _startup(layer)
    holder = layer.kernel if where == "kernel" else layer
    holder.extra = torch.ones(2)  # nothing rebuilt: only the kept object's container grew
    report = guard.restore(layer)
    path = "kernel.extra" if where == "kernel" else "extra"
    assert [(c.path, c.change) for c in report.recapture] == [(path, Change.NEW)]


def test_renamed_key_of_the_same_length_is_seen():
    layer = Layer()
    guard, kept = _startup(layer)
    layer.kernel.table["moved"] = layer.kernel.table.pop("perm")  # same length, same values
    report = guard.restore(layer)
    assert [(c.path, c.change) for c in report.recapture] == [
        ("kernel.table['perm']", Change.DISAPPEARED)]
    assert layer.kernel.table["moved"] is kept["dict"]  # a startup tensor: not reported new


class OtherKernel(Kernel):
    """Another class: the template does not match, the rebuilt object is walked whole."""


@pytest.mark.parametrize("cls", [Kernel, OtherKernel])
def test_rebuilt_object_by_template_or_by_walk_restores_every_slot(cls):
    layer = Layer()
    guard, kept = _startup(layer)
    layer.load(3)
    layer.post_load()
    layer.kernel = cls(layer.weight)
    fresh = {n: t.clone() for n, t in _current(layer).items()}
    survey = guard.watch.survey()
    walked = [chain for chain, _ in survey.roots]
    if cls is Kernel:  # by template: only the functions and partials in it are walked
        assert walked == [(".kernel", ".apply"), (".kernel", ".gemm")]
    else:
        assert walked == [(".kernel",)]
    report = guard.restore(layer)
    assert report.ok, report.recapture
    now = _current(layer)
    for name, t in kept.items():
        torch.testing.assert_close(t, fresh[name], rtol=0, atol=0)
        if name != "tuple":  # a tuple item cannot be re-pointed (copied only)
            assert now[name] is t, name


def test_new_tensor_in_a_rebuilt_object_matched_by_template_is_reported():
    layer = Layer()
    guard, _ = _startup(layer)
    layer.post_load()
    layer.kernel.desc = type(layer.kernel.desc)(scale=layer.kernel.desc.scale,
                                                bias=torch.zeros(4))  # None -> a tensor
    report = guard.restore(layer)
    assert ("kernel.desc.bias", Change.NEW) in {(c.path, c.change) for c in report.recapture}
