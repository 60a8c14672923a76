"""The first-hop sweeps of one build are kept (``stamp_columns.HopSweeps``): the params'
template and the derived tensors' template both prove ``scale`` on the same layers, and the
second proof takes the first one's sweep. A kept sweep is taken only for the same check over
the same module objects; the build is what it is with nothing kept. Canary: planted once by
hand, a kept sweep taken for other modules of the same length makes
``test_a_kept_sweep_is_taken_only_over_the_same_modules`` go red."""

from __future__ import annotations

from typing import Any

import pytest
import torch
from torch import nn

from derivgraph.compiler import build, stamp_columns
from derivgraph.compiler.bind import match_specs
from derivgraph.compiler.reads import probe_path
from derivgraph.compiler.stamp_columns import Check, HopSweeps
from derivgraph.tools.bench_scaling import scaling_model, scaling_spec

from .test_replay_columns import _record


def _check(layer: nn.Module) -> Check:
    t = layer.scale
    fact = ("tensor", 1, (type(t), tuple(t.shape), t.stride(), t.dtype, t.device))
    return Check(probe_path, (("scale",),), fact, type(layer))


def test_a_kept_sweep_is_taken_only_over_the_same_modules() -> None:
    model = scaling_model(4)
    modules = list(model.layers)
    others = list(scaling_model(4).layers)
    check = _check(modules[0])
    calls: list[int] = []

    def swept(on: list[nn.Module]) -> Any:
        def run() -> list[Any]:
            calls.append(len(on))
            return [m.scale for m in on]
        return run

    sweeps = HopSweeps()
    first = sweeps.sweep(modules, check, swept(modules))
    again = sweeps.sweep(list(modules), check, swept(modules))  # another list, same modules
    assert calls == [4] and again == first and again is not first
    other = sweeps.sweep(others, check, swept(others))  # same length, other modules
    assert calls == [4, 4] and [id(t) for t in other] == [id(m.scale) for m in others]
    assert sweeps.sweep(modules[:3], check, swept(modules[:3])) == first[:3]
    assert calls == [4, 4, 3]


def test_a_build_sweeps_each_source_once_and_is_what_it_is_with_nothing_kept(
        monkeypatch: pytest.MonkeyPatch) -> None:
    model = scaling_model(12)
    swept: list[str] = []
    real = stamp_columns._sweep

    def spied(dicts: list[dict[str, Any]], check: Check) -> list[Any]:
        swept.append(check.part or "")
        return real(dicts, check)

    with monkeypatch.context() as patch:
        patch.setattr(stamp_columns, "_sweep", spied)
        kept = _record(build.build_graph(model, match_specs(model, [scaling_spec()])))
    assert sorted(swept) == ["scale", "weight"]  # the params' sweep of scale taken again
    with monkeypatch.context() as patch:
        patch.setattr(HopSweeps, "sweep", lambda self, modules, check, run: run())
        alone = _record(build.build_graph(model, match_specs(model, [scaling_spec()])))
    assert kept == alone
    assert kept[11] == 11  # every later layer stamped


def test_a_build_keeps_no_sweep_past_its_end() -> None:
    """Each build makes its own kept sweeps: a layer changed between two builds is seen."""
    model = scaling_model(6)
    first = build.build_graph(model, match_specs(model, [scaling_spec()]))
    model.layers[3].scale = nn.Parameter(torch.rand(4) + 0.5, requires_grad=False)
    second = build.build_graph(model, match_specs(model, [scaling_spec()]))
    assert first.stamped == 5
    assert second.stamped == 4  # layer 3 (another shape) is not its template's
