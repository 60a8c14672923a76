"""The rebind's kept settles, the two preconditions ``test_settle_kept.py`` left without a
canary: a derived scalar (``Holders._scalars``), and the hops' watch that a rebind after a failed
source check finds (settled by the refill's read, so the rebind needs no flag for it).

A watch this run's check left settled keeps its snapshot (``_kept``) only where the rebind's
stores went into none of its dicts. A derived scalar is stored into its holder's dict (its
``__dict__``), which no table of the rebind names: here that dict is also a hop's (the layer's
``__dict__`` holds the plain ``qm`` object on the way to the derived tensors), so the hops' watch
must be settled again. The oracle of every test: after each refill (A -> B -> A -> A, so that the
scalar is stored both by the pass and by the rebind) every value is a cold compile's, bit for
bit, every holder is its startup object, ``moved()`` is empty and every watch's snapshot is its
dicts' current tags. A watch left stale is only a wider next check (its values stay exact, also
asserted): the canaries see it by its snapshot.
"""

from __future__ import annotations

from typing import Any

import pytest
import torch
from torch import nn

from derivgraph import DerivedTensor, Spec, Target, compile_plan, dict_versions
from derivgraph.runtime import accessors, watch
from derivgraph.runtime import holders as holders_module
from derivgraph.runtime.holders import Holders
from tests.toy import SeededStack

LAYERS = 4
TENSORS = ("inv", "wt")
SEEDS = (1, 2, 1, 1)  # A -> B -> A -> A: the last scalar store is the rebind's own


class QuantState:
    """A plain object on the way to the derived tensors (a quant method's state)."""


class QLayer(nn.Module):
    """The engine rebuilds ``qm``'s tensors and writes its own rounding of ``peak``."""

    def __init__(self, seed: int = 0) -> None:
        super().__init__()
        g = torch.Generator().manual_seed(seed)
        self.scale = nn.Parameter(0.5 + torch.rand(6, generator=g), requires_grad=False)
        self.weight = nn.Parameter(torch.randn(6, 4, generator=g), requires_grad=False)
        self.qm = QuantState()  # the hop layer -> qm is held in this layer's __dict__

    def post_load(self) -> None:
        self.qm.inv = 1.0 / self.scale
        self.qm.wt = self.weight.t().contiguous()
        self.peak = float(self.scale.amax()) * (1 + 1e-6)  # within the spec's tolerance

    def load(self, seed: int) -> None:
        fresh = QLayer(seed)
        with torch.no_grad():
            self.scale.copy_(fresh.scale)
            self.weight.copy_(fresh.weight)


class QStack(SeededStack):
    def __init__(self) -> None:
        super().__init__(QLayer, LAYERS)


TENSOR_SPECS = [
    DerivedTensor(name="inv", owner="qm", kind="attribute", formula="1.0 / scale"),
    DerivedTensor(name="wt", owner="qm", kind="attribute", formula="contiguous(t(weight))"),
]
PEAK = DerivedTensor(name="peak", kind="scalar", formula="amax(scale)", tolerance=1e-4)


def _spec(scalar: bool) -> Spec:
    return Spec(name="q", target=Target(module_class=["QLayer"]),
                derived=[*TENSOR_SPECS, PEAK] if scalar else TENSOR_SPECS)


def _model(seed: int) -> QStack:
    model = QStack()
    model.load(seed)
    model.post_load()
    return model


def _compiled(scalar: bool = True) -> tuple[QStack, Any, dict[str, Any]]:
    model = _model(0)
    plan = compile_plan(model, [_spec(scalar)])
    return model, plan, {k: e.storage for k, e in plan.entries.items()}


def _check_against_cold(model: QStack, plan: Any, startup: dict[str, Any], seed: int,
                        scalar: bool = True) -> None:
    """Every derived value is a cold compile's of the same weights, bit for bit, held by its
    startup object; the scalar is the plan's number (not the engine's rounding)."""
    cold_model = _model(seed)
    cold = compile_plan(cold_model, [_spec(scalar)])
    for i, layer in enumerate(model.layers):
        for name in TENSORS:
            key = f"layers.{i}.qm.{name}"
            held = getattr(layer.qm, name)
            assert held is startup[key], key
            ref = cold.entries[key].storage
            assert held.dtype == ref.dtype and torch.equal(held, ref), key
        if scalar:
            key = f"layers.{i}.peak"
            assert layer.peak == plan.entries[key].storage == cold.entries[key].storage, key
            engine = float(cold_model.layers[i].scale.amax()) * (1 + 1e-6)
            assert layer.peak != engine  # the engine's rounding was replaced


def _settled(plan: Any) -> list[bool]:
    holders = plan.holders
    watches = [holders.hops.watch, holders._source_watch, holders.table.watch]
    return [w is not None and w.unchanged() for w in watches]


def _every_table_watched(monkeypatch: pytest.MonkeyPatch) -> None:
    """A canary's setting: version tags available (else skipped), every table watched."""
    if not dict_versions.AVAILABLE:
        pytest.skip("no PEP 509 version tags on this interpreter")
    monkeypatch.setattr(watch, "MIN_WATCHED", 0)


def _scalar_stored_into_a_hop_dict(plan: Any, model: QStack) -> None:
    """The model's premise: the scalar's dict is a hop's, in no dict the holder table or the
    sources watch (so only the scalar rule makes the hops' watch settle again)."""
    holders = plan.holders
    hop_dicts = list(map(id, holders.hops.watch.versions.dicts))
    assert id(model.layers[0].__dict__) in hop_dicts
    assert holders.hops.watch.apart_from(holders.table.watch)
    assert holders._source_watch.apart_from(holders.table.watch)
    assert [e.id for e in holders._scalars] == [f"layers.{i}.peak" for i in range(LAYERS)]


def test_a_scalar_stored_into_a_hop_dict_settles_the_hops(
        dict_tags: bool, monkeypatch: pytest.MonkeyPatch) -> None:
    model, plan, startup = _compiled()
    stores: list[str] = []
    rebind_entries = Holders.rebind_entries

    def spy(self: Holders, entries: Any, report: Any = None, known: Any = None) -> int:
        entries = list(entries)
        stores.extend(e.id for e in entries)
        return rebind_entries(self, entries, report, known)

    monkeypatch.setattr(Holders, "rebind_entries", spy)
    peaks = [f"layers.{i}.peak" for i in range(LAYERS)]
    for n, seed in enumerate(SEEDS):
        model.load(seed)
        model.post_load()
        stores.clear()
        report = plan.refill(verify=seed == 2)
        again = n == len(SEEDS) - 1  # the same weights: the rebind stores the scalars
        assert report.rebinds == LAYERS * len(TENSORS) + (LAYERS if again else 0)
        assert report.recapture_required == ([] if again else peaks)  # stored by the pass
        assert sorted(stores) == peaks
        _check_against_cold(model, plan, startup, seed)
        if dict_tags:
            _scalar_stored_into_a_hop_dict(plan, model)
            assert _settled(plan) == [True, True, True]
        else:
            assert plan.holders.hops.watch is None and plan.holders.table.watch is None
    assert plan.moved() == []


def test_canary_scalar_stores_ignored_leave_the_hops_stale(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """The planted bug: the rebind's stores taken as known (the table's dicts) although a
    derived scalar was stored. The values stay exact (a stale snapshot only widens the next
    check), the hops' snapshot is stale, and the next refill without the plant settles it."""
    _every_table_watched(monkeypatch)
    model, plan, startup = _compiled()
    for seed in SEEDS[:2]:
        model.load(seed)
        model.post_load()
        plan.refill()
    kept = holders_module._kept
    with monkeypatch.context() as planted:
        planted.setattr(holders_module, "_kept", lambda w, stored: kept(
            w, plan.holders.table.watch if stored is None else stored))
        for seed in SEEDS[2:]:
            model.load(seed)
            model.post_load()
            assert plan.refill(verify=True).moved == []
            _check_against_cold(model, plan, startup, seed)
            assert _settled(plan) == [False, True, True]  # red: the hops' snapshot is stale
    model.load(2)
    model.post_load()
    assert plan.refill(verify=True).moved == []
    _check_against_cold(model, plan, startup, 2)
    assert _settled(plan) == [True, True, True]


# ---- the hops' watch after a new walk ------------------------------------------------------
def _moved_source(model: QStack) -> None:
    """The engine re-points a source at a new tensor of the same layout and value: the run's
    source check fails, the plan binds again (a new hop table) and its refill walks the hops."""
    layer = model.layers[1]
    layer.weight = nn.Parameter(layer.weight.detach().clone(), requires_grad=False)


class _HopSettles:
    """Per rebind after a failed source check (this run's hop check was then the refill read's
    ``owners_current``): whether the hops' watch was settled when the rebind began
    (``at_rebind``) and when it ended (``after_rebind``); per hops' settle that rebind made,
    whether the snapshot was stale and whether the rebind's stores were known (``calls``)."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.at_rebind: list[bool] = []
        self.after_rebind: list[bool] = []
        self.calls: list[tuple[bool, bool]] = []  # (stale before the settle, stores known)
        self._inside: Holders | None = None
        rebind, settle = Holders.rebind, accessors.HopTable.settle

        def spy_rebind(holders: Holders, report: Any = None) -> int:
            if holders._checked_by(report, holders._owners_checked):
                return rebind(holders, report)
            hops = holders.hops.watch
            self.at_rebind.append(hops is not None and hops.unchanged())
            self._inside = holders
            try:
                return rebind(holders, report)
            finally:
                self._inside = None
                self.after_rebind.append(holders.hops.watch.unchanged())

        def spy_settle(hops: accessors.HopTable) -> None:
            holders = self._inside
            if holders is not None:
                stale = hops.watch is not None and not hops.watch.unchanged()
                self.calls.append((stale, not holders._scalars))
            settle(hops)

        monkeypatch.setattr(Holders, "rebind", spy_rebind)
        monkeypatch.setattr(accessors.HopTable, "settle", spy_settle)


def _refills_with_a_moved_source(model: QStack, plan: Any, startup: dict[str, Any],
                                 scalar: bool) -> None:
    for n, seed in enumerate(SEEDS):
        model.load(seed)
        model.post_load()
        _moved_source(model)
        report = plan.refill(verify=True)
        assert report.moved == ["layers.1.weight"]  # the moved source, reported
        again = scalar and n == len(SEEDS) - 1  # the rebind stores the scalars
        assert report.rebinds == LAYERS * len(TENSORS) + (LAYERS if again else 0)
        _check_against_cold(model, plan, startup, seed, scalar)


@pytest.mark.parametrize("scalar", [True, False], ids=["scalar", "no-scalar"])
def test_a_rebind_after_a_new_walk_finds_the_hops_settled(
        scalar: bool, monkeypatch: pytest.MonkeyPatch) -> None:
    """After a failed source check the plan bound again (a new hop table) and the refill's read
    walked the hops (``owners_current``), which settled their watch. So the rebind settles the
    hops by ``_kept`` alone, as after a passed check: only a derived scalar's stores (by the
    pass, so the watch is stale at the rebind, or by the rebind) make it settle them again.
    A plan store into a hop dict between the read and the rebind makes this red (see the
    canary below)."""
    _every_table_watched(monkeypatch)
    model, plan, startup = _compiled(scalar)
    spy = _HopSettles(monkeypatch)
    _refills_with_a_moved_source(model, plan, startup, scalar)
    assert _settled(plan) == [True, True, True]
    # the pass stores the scalars on a new weight (seeds 1, 2, 1), the rebind on the same (1)
    assert spy.at_rebind == ([False, False, False, True] if scalar else [True] * len(SEEDS))
    assert spy.after_rebind == [True] * len(SEEDS)
    assert spy.calls == ([(True, False)] * len(SEEDS) if scalar else [])


def test_canary_a_hop_dict_stored_before_the_rebind_is_seen(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Planted: a store into a hop dict between the refill's read and the rebind that leaves
    every hop its object (``hops.intact()``; ``qm`` replaced, then put back). The spy sees the
    hops' watch stale at the rebind, and the rebind (its stores known, apart from the hops)
    keeps that stale snapshot: the case a flag for "this run's hop check" would have settled.
    It costs only a wider next check: the values stay exact, the verify's check settles it."""
    _every_table_watched(monkeypatch)
    model, plan, startup = _compiled(scalar=False)
    spy = _HopSettles(monkeypatch)
    rebind = Holders.rebind  # the spy's

    def store_then_rebind(holders: Holders, report: Any = None) -> int:
        held = model.layers[0].__dict__
        qm = held["qm"]
        held["qm"] = QuantState()
        held["qm"] = qm  # the same object back: the dict's tag moved
        return rebind(holders, report)

    with monkeypatch.context() as planted:
        planted.setattr(Holders, "rebind", store_then_rebind)
        _refills_with_a_moved_source(model, plan, startup, scalar=False)
    assert spy.at_rebind == [False] * len(SEEDS)  # red: the premise above is broken
    assert spy.after_rebind == [False] * len(SEEDS)  # the stale snapshot kept
    assert spy.calls == []
    assert _settled(plan) == [True, True, True]  # the verify's hop check settled it
    _refills_with_a_moved_source(model, plan, startup, scalar=False)
    assert spy.at_rebind[len(SEEDS):] == spy.after_rebind[len(SEEDS):] == [True] * len(SEEDS)
