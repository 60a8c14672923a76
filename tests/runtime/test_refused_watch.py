"""A table whose version-tag watch was refused once is not asked again.

:func:`~derivgraph.runtime.watch.watch_items` refuses a table of fewer than
:data:`~derivgraph.runtime.watch.MIN_WATCHED` items (or without proven tags); the owner hops,
the holders and the sources' holder dicts are fixed between binds, so the refusal stands and
their ``settle`` (and the sources' first full sweep) skip the call on every later run and
reload. A table large enough is still watched, and a bind (sources moved) asks again. Canaries:
``benchmarks/results/refill60/NOTES.md``.
"""

from __future__ import annotations

from typing import Any

import pytest
import torch
from torch import nn

from derivgraph import compile_plan
from derivgraph.runtime import accessors, holders, watch
from tests.runtime.test_refill_batched import SPEC, _check_against_cold, _stack


def _asks(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Counts every call of ``watch_items`` the plan makes (the size of each table asked)."""
    sizes: list[int] = []
    real = watch.watch_items

    def spy(dicts: Any, outside: Any) -> Any:
        sizes.append(len(dicts))
        return real(dicts, outside)

    monkeypatch.setattr(accessors, "watch_items", spy)
    monkeypatch.setattr(holders, "watch_items", spy)
    return sizes


def _compiled(seed: int = 0) -> tuple[nn.Module, Any, dict[str, torch.Tensor]]:
    model = _stack(seed)
    plan = compile_plan(model, [SPEC])
    return model, plan, {k: e.storage for k, e in plan.entries.items()}


def test_a_refused_watch_is_not_asked_again_and_the_sweeps_still_find_a_rebuilt_holder(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(watch, "MIN_WATCHED", 10_000)  # every table refused
    model, plan, startup = _compiled()
    asks = _asks(monkeypatch)
    plan.run()
    plan.run()
    first = len(asks)
    assert plan.holders.table.watch is None and plan.holders.hops.watch is None
    assert plan.holders._source_watch is None
    assert not plan.holders.table.watchable and not plan.holders.hops.watchable
    assert not plan.holders._source_watchable
    for seed in (1, 2, 3):
        model.layers[0].inv = nn.Parameter(model.layers[0].inv.detach().clone(),
                                           requires_grad=False)
        model.layers[3].strides = model.layers[3].strides.clone()
        model.load(seed)
        assert plan.run().rebinds == 2  # the direct sweeps find both
        assert model.layers[0].inv is startup["layers.0.inv"]
        assert model.layers[3].strides is startup["layers.3.strides"]
        _check_against_cold(model, startup, seed)
    assert len(asks) == first  # no table asked again after its refusal
    assert plan.moved() == []


def test_a_table_large_enough_is_watched(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(watch, "MIN_WATCHED", 0)  # every table watched
    model, plan, startup = _compiled()
    plan.run()
    plan.run()
    h = plan.holders
    assert h.table.watch is not None and h.hops.watch is not None
    assert h._source_watch is not None
    model.layers[3].strides = model.layers[3].strides.clone()
    assert plan.run().rebinds == 1
    assert model.layers[3].strides is startup["layers.3.strides"]


def test_a_rebuilt_holder_table_is_asked_afresh(monkeypatch: pytest.MonkeyPatch) -> None:
    """A refusal belongs to its table: a holder table made again (a new object) asks."""
    monkeypatch.setattr(watch, "MIN_WATCHED", 10_000)
    _model, plan, _startup = _compiled()
    plan.run()
    table = plan.holders.table
    assert not table.watchable
    monkeypatch.setattr(watch, "MIN_WATCHED", 0)
    plan.run()
    assert table.watch is None  # refused for good (its size is fixed)
    fresh = accessors.HolderTable(table.entries, plan.holders._where)
    fresh.settle()
    assert fresh.watch is not None and fresh.watchable


def test_a_bind_asks_the_sources_again(monkeypatch: pytest.MonkeyPatch) -> None:
    """The sources' refusal lasts until the next bind (a moved source binds them again)."""
    monkeypatch.setattr(watch, "MIN_WATCHED", 10_000)
    model, plan, _startup = _compiled()
    plan.run()
    assert plan.holders._source_watch is None and not plan.holders._source_watchable
    monkeypatch.setattr(watch, "MIN_WATCHED", 0)
    plan.run()
    assert plan.holders._source_watch is None  # refused until the sources are bound again
    source = next(iter(plan.holders._sources.rows()))[0]
    owner, _, name = source.rpartition(".")
    held = model.get_submodule(owner)._parameters[name]
    held.data = held.data.clone()  # the source moved: the next run binds the sources again
    report = plan.run()
    assert any(r.startswith(source) for r in report.recapture_required)
    plan.run()
    assert plan.holders._source_watch is not None


def test_refills_after_a_refusal_ask_nothing_and_stay_bit_exact(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """The reload path (the engine's post-load step, then ``refill(verify=True)``)."""
    monkeypatch.setattr(watch, "MIN_WATCHED", 10_000)
    model, plan, startup = _compiled()
    asks = _asks(monkeypatch)
    plan.refill()
    first = len(asks)
    for seed in (1, 0, 1):
        model.load(seed)
        model.post_load()  # every holder rebuilt
        report = plan.refill(verify=True)
        assert report.moved == [] and report.rebinds == 16
        _check_against_cold(model, startup, seed)
    assert len(asks) == first
    model.layers[2].wt.data = torch.zeros(4, 6)  # re-pointed after the last refill
    assert plan.moved() == ["layers.2.wt"]
