"""The rebind's settles: a watch this run's check left settled keeps its snapshot where the
rebind stored into none of its dicts.

After the plan's own stores the holder table's watch is settled (its dicts moved); the hops'
and the sources' watches are settled only where a store may have gone into one of their dicts
(a dict they share with the holder table, a holder re-bound by the per-entry path, a derived
scalar). The oracle every test asserts: after each refill every watch's snapshot is its dicts'
current tags (``unchanged()``), the values are the engine's fresh ones and every holder is its
startup object. The canaries plant each precondition away and see a watch left stale.
"""

from __future__ import annotations

from typing import Any

import pytest
import torch
from torch import nn

from derivgraph import compile_plan, dict_versions
from derivgraph.runtime import holders as holders_module
from derivgraph.runtime import watch
from derivgraph.runtime.watch import ItemWatch
from derivgraph.tools.deepseek_workload import DeepseekModel, deepseek_specs
from tests.runtime.test_refill_batched import SPEC, _check_against_cold, _stack

NAMES = ("g1", "g2", "a1", "a2", "ab_strides1", "ab_strides2", "c_strides1", "c_strides2")


def _deepseek() -> tuple[DeepseekModel, Any]:
    """The deepseek workload, small: holders in each layer's ``__dict__``, sources in its
    ``_parameters``, hops in ``_modules``: no dict shared between the three tables."""
    model = DeepseekModel(scale=1 / 256, layers=3, experts=4)
    model.post_load()
    plan = compile_plan(model, deepseek_specs())
    for seed in range(3):  # the watches built and settled
        model.reload(seed)
        model.post_load()
        plan.refill()
    return model, plan


def _watches(plan: Any) -> list[ItemWatch | None]:
    holders = plan.holders
    return [holders.hops.watch, holders._source_watch, holders.table.watch]


def _settled(plan: Any) -> list[bool]:
    return [w is not None and w.unchanged() for w in _watches(plan)]


def _fresh(model: DeepseekModel) -> dict[tuple[int, str], torch.Tensor]:
    return {(i, n): getattr(layer, n).clone() for i, layer in enumerate(model.layers)
            for n in NAMES}


def _check_refilled(model: DeepseekModel, plan: Any,
                    fresh: dict[tuple[int, str], torch.Tensor]) -> None:
    """Every holder is its startup object, holding the engine's fresh value."""
    for (i, name), value in fresh.items():
        held = getattr(model.layers[i], name)
        assert held is plan.entries[f"layers.{i}.{name}"].storage
        assert torch.equal(held, value)


class _Settles:
    """Records the watches settled, per call."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.watches: list[ItemWatch] = []
        settle = ItemWatch.settle

        def spy(watch: ItemWatch) -> None:
            self.watches.append(watch)
            settle(watch)

        monkeypatch.setattr(ItemWatch, "settle", spy)


def test_apart_from_compares_the_watched_dicts() -> None:
    if not dict_versions.AVAILABLE:
        pytest.skip("no PEP 509 version tags on this interpreter")
    a, b, c = {"x": 1}, {"y": 2}, {"z": 3}
    first = watch.watch_items([a, b] * 40, {})
    apart = watch.watch_items([c] * 80, {})
    shared = watch.watch_items([b, c] * 40, {})
    assert first is not None and apart is not None and shared is not None
    assert first.apart_from(apart) and apart.apart_from(first)
    assert not first.apart_from(shared) and not shared.apart_from(apart)
    assert first.apart_from(apart)  # the answer kept for one other watch is not reused
    assert not first.apart_from(shared)


def test_disjoint_watches_are_not_settled_again(dict_tags: bool,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    model, plan = _deepseek()
    spy = _Settles(monkeypatch)
    for seed in range(3, 7):
        model.reload(seed)
        model.post_load()
        fresh = _fresh(model)
        report = plan.refill(verify=seed % 2 == 1)
        assert report.rebinds == len(fresh) + 8  # every holder rebuilt (and the kv stacks)
        _check_refilled(model, plan, fresh)
        if dict_tags:
            assert _settled(plan) == [True, True, True]
            assert spy.watches == [plan.holders.table.watch]  # only the stored dicts' tags
            assert plan.holders.hops.watch.apart_from(plan.holders.table.watch)
        else:
            assert _watches(plan) == [None, None, None] and spy.watches == []
        spy.watches.clear()
    assert plan.moved() == []


def test_watches_sharing_a_stored_dict_are_settled(dict_tags: bool,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    """The test stack's ``inv`` is a parameter: its holder dict is also the sources' dict."""
    monkeypatch.setattr(watch, "MIN_WATCHED", 0)
    model = _stack(0)
    plan = compile_plan(model, [SPEC])
    startup = {k: e.storage for k, e in plan.entries.items()}
    for seed in (1, 2, 1):
        model.load(seed)
        model.post_load()
        spy = _Settles(monkeypatch)
        assert plan.refill().rebinds == 16
        _check_against_cold(model, startup, seed)
        if dict_tags:
            holders = plan.holders
            assert not holders._source_watch.apart_from(holders.table.watch)
            assert holders._source_watch in spy.watches
            assert _settled(plan) == [True, True, True]
    assert plan.moved() == []


def _every_table_watched(monkeypatch: pytest.MonkeyPatch) -> None:
    """A canary's setting: version tags available (else skipped), every table watched."""
    if not dict_versions.AVAILABLE:
        pytest.skip("no PEP 509 version tags on this interpreter")
    monkeypatch.setattr(watch, "MIN_WATCHED", 0)


def test_canary_shared_dicts_taken_as_apart_leave_the_sources_stale(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """The planted bug: every watch taken as apart from the stored dicts."""
    _every_table_watched(monkeypatch)
    model = _stack(0)
    plan = compile_plan(model, [SPEC])
    for seed in (1, 2):
        model.load(seed)
        model.post_load()
        plan.refill()
    monkeypatch.setattr(ItemWatch, "apart_from", lambda self, other: True)
    model.load(3)
    model.post_load()
    plan.refill()
    assert _settled(plan) == [True, False, True]  # red: the sources' snapshot is stale


def test_a_holder_rebound_one_by_one_settles_every_watch(dict_tags: bool) -> None:
    """The engine moved a holder into the sources' registry: the per-entry path stores it
    back (into that registry too), so the sources' watch is settled again."""
    model, plan = _deepseek()
    model.reload(7)
    model.post_load()
    _to_parameters(model.layers[1], "g1")
    fresh = _fresh(model)
    plan.refill()
    _check_refilled(model, plan, fresh)
    assert "g1" not in model.layers[1]._parameters
    if dict_tags:
        assert _settled(plan) == [True, True, True]
    model.reload(8)
    model.post_load()
    fresh = _fresh(model)
    plan.refill()
    _check_refilled(model, plan, fresh)
    assert plan.moved() == []


def test_canary_per_entry_stores_ignored_leave_the_sources_stale(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """The planted bug: the stores' dicts taken as known after a per-entry rebind."""
    _every_table_watched(monkeypatch)
    model, plan = _deepseek()
    kept = holders_module._kept
    monkeypatch.setattr(holders_module, "_kept", lambda w, stored: kept(
        w, plan.holders.table.watch if stored is None else stored))
    model.reload(7)
    model.post_load()
    _to_parameters(model.layers[1], "g1")
    plan.refill()
    assert _settled(plan) == [True, False, True]  # red: the sources' snapshot is stale


def _to_parameters(layer: nn.Module, name: str) -> None:
    """The engine registers its fresh ``name`` as a parameter instead of an attribute."""
    fresh = layer.__dict__.pop(name)
    layer.register_parameter(name, nn.Parameter(fresh, requires_grad=False))
