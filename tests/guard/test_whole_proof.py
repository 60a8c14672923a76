"""Every watched dict item proven by its raw words on each sweep (no version tag read).

Where :mod:`derivgraph.dict_slots` proves the interpreter's dict layout and the watch has at most
:data:`~derivgraph.guard.sweep.WHOLE_ITEMS` swept items, each sweep checks every dict's length
and proves every item by its words at once, reading by key only what the words do not prove.
The verdicts are the sweep of every container's: here a reload like vLLM's (every linear's
``weight`` re-registered, a fresh ``cpu_linear`` closure in each) is restored, and an
undeclared tensor it leaves where an int was, a new key or a deleted one is still found.
"""

from __future__ import annotations

from typing import Any

import pytest
import torch
from torch import nn

from derivgraph import dict_slots
from derivgraph.dict_versions import DictVersions
from derivgraph.guard import Change, Guard
from derivgraph.guard import sweep as sweep_module
from derivgraph.guard.sweep import Sweep


class _Linear(nn.Module):
    def __init__(self, seed: int) -> None:
        super().__init__()
        g = torch.Generator().manual_seed(seed)
        self.weight = nn.Parameter(torch.randn(3, 3, generator=g), requires_grad=False)
        self.bias = nn.Parameter(torch.zeros(3), requires_grad=False)
        self.tp_size = 1
        self.scratch: torch.Tensor | None = None

    def post_load(self, n: int) -> None:
        """vLLM's per-layer post-load step: a derived tensor, a fresh closure of one shape."""
        self.scratch = self.weight * 2
        self.cpu_linear = lambda x, w, b: torch.nn.functional.linear(x, w, b) * n


class _Model(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.layers = nn.ModuleList([_Linear(i) for i in range(4)])

    def reload(self, n: int) -> None:
        """Like vLLM's layerwise reload: each ``weight`` registered again after its ``bias``
        (its entry moves), then every layer's post-load step."""
        for layer in self.layers:
            weight = layer._parameters.pop("weight")
            layer._parameters["weight"] = weight
            layer.post_load(n)


def _startup() -> tuple[_Model, Guard]:
    model = _Model()
    for layer in model.layers:
        layer.post_load(2)
    guard = Guard()
    guard.snapshot(model)
    return model, guard


@pytest.fixture
def whole(version_tags: bool) -> None:
    if sweep_module.WHOLE_ITEMS == 0 or not dict_slots.AVAILABLE:
        pytest.skip("every item proven at once only where the raw words are (the whole run)")


def test_each_sweep_proves_every_item_where_the_words_are_proven(whole, monkeypatch) -> None:
    _, guard = _startup()
    sweep = guard.watch.sweep
    assert sweep.whole == tuple(sweep.tagged) and sweep.tags is None
    monkeypatch.setattr(sweep_module, "WHOLE_ITEMS", len(sweep.acc_dicts) - 1)
    _, guard = _startup()
    assert guard.watch.sweep.whole is None  # more items than that: the tags, as before


def test_a_vllm_like_reload_is_restored_reading_no_tag(whole, monkeypatch) -> None:
    model, guard = _startup()
    kept = [layer.scratch for layer in model.layers]

    def no_tags(self: DictVersions) -> list[int]:
        raise AssertionError("a version tag read")

    monkeypatch.setattr(DictVersions, "changed", no_tags)
    for n in (3, 4, 5):
        model.reload(n)
        report = guard.restore(model)
        assert report.ok, report.recapture
        assert sorted(c.path for c in report.restored) == [
            f"layers.{i}.scratch" for i in range(4)]
        assert all(layer.scratch is t for layer, t in zip(model.layers, kept))
        torch.testing.assert_close(kept[0], model.layers[0].weight * 2, rtol=0, atol=0)


@pytest.mark.parametrize("change", ["tensor over an int", "new key", "deleted key",
                                    "tensor over a harmless closure"])
def test_an_undeclared_change_among_the_reload_s_rebinds_is_found(change: str) -> None:
    """Every mode (the conftest runs four): the reload's own rebinds are no change, and one
    more change of each kind is reported."""
    model, guard = _startup()
    model.reload(3)
    assert guard.restore(model).ok
    model.reload(4)
    layer = model.layers[2]
    if change == "tensor over an int":
        layer.tp_size = torch.zeros(2)
        expected = [("layers.2.tp_size", Change.NEW)]
    elif change == "new key":
        layer.extra = torch.ones(2)
        expected = [("layers.2.extra", Change.NEW)]
    elif change == "deleted key":
        del layer.scratch
        expected = [("layers.2.scratch", Change.DISAPPEARED)]
    else:
        layer.cpu_linear = torch.ones(1)
        expected = [("layers.2.cpu_linear", Change.NEW)]
    report = guard.restore(model)
    assert [(c.path, c.change) for c in report.recapture] == expected


def _planted_whole_sweep_skipping(monkeypatch: pytest.MonkeyPatch, skipped: Any) -> None:
    """Planted bug: the whole sweep leaves the dict ``skipped`` out."""
    real = Sweep._dirty_whole

    def without(self: Sweep, order: tuple[int, ...]) -> Any:
        return real(self, tuple(i for i in order if self.live[i] is not skipped))

    monkeypatch.setattr(Sweep, "_dirty_whole", without)


def test_canary_a_whole_sweep_skipping_a_dict_misses_the_tensor(whole, monkeypatch) -> None:
    model, guard = _startup()
    layer = model.layers[2]
    _planted_whole_sweep_skipping(monkeypatch, layer.__dict__)
    model.reload(3)
    layer.tp_size = torch.zeros(2)
    assert guard.restore(model).recapture == []  # the planted bug: the tensor goes unseen
