"""The column proof's layout check (:func:`~derivgraph.compiler.stamp_columns._all_layout`)
tries a TorchDynamo ``TensorGuards`` of the column's first tensor before its four field sweeps,
where the column holds plain tensors or parameters (at least ``_GUARD_MIN``): its answer must
be the per-field one (:func:`~derivgraph.compiler.stamp_columns._layout_ok`, all rows) for a
column with one planted row of another shape, stride, dtype, device, class or
``requires_grad`` (the guard refuses that row: the sweeps decide), and a column proof over
such a column must prove the rows the per-layer probes prove.

Canary: a guard that passes every tensor (``_guarded`` planted to answer True) proves a
column with a bad row."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
import torch
from torch import nn

from derivgraph.compiler import stamp_columns
from derivgraph.compiler.reads import layout
from derivgraph.compiler.stamp_columns import _all_layout, _layout_ok, prove_rows

from .test_stamp_columns import _column
from .test_stamp_facts import _VARIANTS, _every_probe, _Graph, _template

N = 80  # over stamp_columns._GUARD_MIN


def _param(t: torch.Tensor, grad: bool = False) -> nn.Parameter:
    return nn.Parameter(t, requires_grad=grad)


#: one row planted at position ``at`` of a column of ``N`` parameters of 8 float32 elements
_PLANTS: dict[str, Callable[[], Any]] = {
    "none": lambda: _param(torch.ones(8)),
    "shape": lambda: _param(torch.ones(9)),
    "stride": lambda: _param(torch.ones(16)[::2]),  # shape (8,), stride (2,)
    "dtype": lambda: _param(torch.ones(8, dtype=torch.float64)),
    "device": lambda: _param(torch.ones(8, device="meta")),
    "class": lambda: torch.ones(8),  # a plain tensor among parameters
    "requires_grad": lambda: _param(torch.ones(8), grad=True),  # the layout's: guard refuses
    "2d": lambda: _param(torch.ones(1, 8)),
}


def _planted(plant: str, at: int) -> list[Any]:
    got = [_param(torch.ones(8)) for _ in range(N)]
    got[at] = _PLANTS[plant]()
    return got


@pytest.mark.parametrize("at", [1, N // 2, N - 1])
@pytest.mark.parametrize("plant", list(_PLANTS))
def test_the_guarded_check_answers_as_the_fields(plant: str, at: int) -> None:
    got = _planted(plant, at)
    _, shape, stride, dtype, device = layout(got[0])
    want = all(_layout_ok(got, shape, stride, dtype, device))
    assert want is (plant in ("none", "class", "requires_grad"))
    assert _all_layout(got, shape, stride, dtype, device) is want


@pytest.mark.parametrize("plant", ["shape", "stride", "dtype", "device", "2d"])
def test_canary_a_guard_that_passes_every_tensor_is_caught(
        plant: str, monkeypatch: pytest.MonkeyPatch) -> None:
    got = _planted(plant, N - 1)
    _, shape, stride, dtype, device = layout(got[0])
    assert not _all_layout(got, shape, stride, dtype, device)
    monkeypatch.setattr(stamp_columns, "_guarded", lambda *args: True)
    assert _all_layout(got, shape, stride, dtype, device)  # the planted bug shows


def test_the_guard_decides_a_good_column_and_the_sweeps_are_not_read(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """The guard is the path taken: with the field reads planted to fail, a good column
    still passes (and a column the guard refuses is then refused by the planted reads)."""
    got = _planted("none", 1)
    _, shape, stride, dtype, device = layout(got[0])
    assert _all_layout(got, shape, stride, dtype, device)
    monkeypatch.setattr(stamp_columns, "_dtype", lambda t: None)
    assert _all_layout(got, shape, stride, dtype, device)
    got[5] = _param(torch.ones(8), grad=True)
    assert not _all_layout(got, shape, stride, dtype, device)


def test_a_wrong_first_tensor_builds_no_guard(monkeypatch: pytest.MonkeyPatch) -> None:
    """The guard is built from the first tensor only where its fields are the layout's: a
    column of one other layout throughout passes no guard."""
    built: list[Any] = []
    real = stamp_columns._TensorGuards

    def spy(*args: Any, **kwargs: Any) -> Any:
        built.append(args)
        return real(*args, **kwargs)

    monkeypatch.setattr(stamp_columns, "_TensorGuards", spy)
    got = [_param(torch.ones(9)) for _ in range(N)]
    assert not _all_layout(got, torch.Size([8]), (1,), torch.float32, torch.device("cpu"))
    assert built == []
    good = [_param(torch.ones(8)) for _ in range(N)]
    assert _all_layout(good, torch.Size([8]), (1,), torch.float32, torch.device("cpu"))
    assert len(built) == 1


def test_without_the_guard_the_sweeps_answer(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(stamp_columns, "_TensorGuards", None)
    for plant in _PLANTS:
        got = _planted(plant, N // 2)
        _, shape, stride, dtype, device = layout(got[0])
        assert _all_layout(got, shape, stride, dtype, device) \
            is all(_layout_ok(got, shape, stride, dtype, device))


@pytest.mark.parametrize("variant", ["shape", "dtype", "stride", "device", "class"])
def test_a_long_column_proves_the_rows_every_probe_proves(variant: str) -> None:
    """A column proof over ``N`` layers, one of another layout (so the guard is tried and
    refuses it), proves exactly the layers the per-layer probes prove."""
    reads, graph = _template(), _Graph()
    variants = ["same"] * N
    variants[N - 3] = variant
    bounds = _column(variants)
    proven = prove_rows(graph, reads, bounds, [{}] * len(bounds))
    for bound, v, got in zip(bounds, variants, proven, strict=True):
        want = _every_probe(graph, reads, bound)
        assert got is None or got == want, v
        assert (want is None) is (v != "same")
    assert proven[N - 3] is None
    assert sum(got is not None for got in proven) >= N - 1 - 1  # the template's row aside
    assert _VARIANTS[variant] is not None
