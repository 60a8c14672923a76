"""A refill table's :class:`~derivgraph.runtime.engine.Layouts` built from its layout runs
(prepare83): each run's number of dimensions read once and its indices of ndim >= 2 taken
whole, where the runs prove every shape of a run equal. The check it builds must be the
check built shape by shape: the same dims, the same targets read by shape, and the same
answers on fresh tensors (a transposed 2-D tensor and a 1-D one of the same numel refused).
Canaries: a planted run reader that drops the runs of ndim >= 2, or reads each run's dims
from another run, goes red."""

from __future__ import annotations

from typing import Any

import pytest
import torch

from derivgraph import compile_plan
from derivgraph.runtime import engine
from derivgraph.runtime.engine import Layouts, RefillTable
from derivgraph.tools.bench_scaling import scaling_spec
from tests.compiler.test_stamp_reload import _model

_SHAPES = [(8,), (8,), (4, 2), (4, 2), (4, 2), (), (2, 2, 2), (8,), (8,), (8,)]


def _runs(shapes: list[tuple[int, ...]]) -> list[tuple[int, int]]:
    cuts = [0] + [i for i in range(1, len(shapes)) if shapes[i] != shapes[i - 1]] + [len(shapes)]
    return list(zip(cuts, cuts[1:]))


def _layouts(shapes: list[tuple[int, ...]], runs: Any, dtype: torch.dtype = torch.float32) \
        -> Layouts:
    sizes = [torch.Size(s) for s in shapes]
    return Layouts([dtype] * len(sizes), sizes, [s.numel() for s in sizes], runs)


def _facts(layouts: Layouts) -> Any:
    nd = None if layouts._nd is None else (
        None if layouts._nd[0] is None else layouts._nd[0](list(range(len(layouts.shapes)))),
        layouts._nd[1])
    return layouts._dims, layouts._sizes, nd


@pytest.mark.parametrize("shapes", [_SHAPES, [(8,)] * 12 + [(4, 2)] * 3, [(4, 2)] * 5, [],
                                    [(3,)] * 4 + [(2, 2, 2)] * 2 + [(5,)] * 6])
def test_runs_build_the_check_the_shapes_build(shapes: list[tuple[int, ...]]) -> None:
    by_runs, by_shape = _layouts(shapes, _runs(shapes)), _layouts(shapes, None)
    assert _facts(by_runs) == _facts(by_shape)
    good = [torch.zeros(s) for s in shapes]
    assert by_runs.swept(good) and by_shape.swept(good)
    for i, s in enumerate(shapes):  # another shape of the same numel: refused by both
        other = (s[::-1] if len(s) >= 2 and s != s[::-1] else (int(torch.Size(s).numel()),)
                 if len(s) != 1 else (1, s[0]))
        bad = [*good[:i], torch.zeros(other), *good[i + 1:]]
        assert by_runs.swept(bad) is by_shape.swept(bad) is False, (s, other)


def test_the_refill_tables_layouts_are_built_from_its_runs(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """A compiled plan's table (a narrower layer: two shapes) hands its runs, and its layout
    check is the one built shape by shape."""
    seen: list[Any] = []
    real = Layouts.__init__

    def spy(self: Layouts, dtypes: Any, shapes: Any, numels: Any, runs: Any = None) -> None:
        seen.append(runs)
        real(self, dtypes, shapes, numels, runs)

    monkeypatch.setattr(Layouts, "__init__", spy)
    plan = compile_plan(_model({"n": 6}), [scaling_spec()])
    table = RefillTable(plan.holders.table, plan._refill_targets(), set(plan.constant_entries),
                        set(plan._opaque()))
    assert seen[-1] is not None and len(seen[-1]) >= 2
    reference = Layouts(table.dtypes, table.shapes, table._numels)
    assert _facts(table._layouts) == _facts(reference)


def _planted_chain(drop_nd: bool) -> Any:
    real = engine.chain

    class Planted:
        @staticmethod
        def from_iterable(parts: Any) -> Any:
            parts = list(parts)
            if parts and isinstance(parts[0], range):  # the nd indices
                return real.from_iterable([] if drop_nd else parts)
            if not drop_nd and len(parts) > 1:  # each run's dims from the next run's
                parts = [*parts[1:], parts[0]]
            return real.from_iterable(parts)

    return Planted


@pytest.mark.parametrize("drop_nd", [True, False], ids=["nd-dropped", "dims-shifted"])
def test_canary_a_planted_run_reader_is_caught(drop_nd: bool,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(engine, "chain", _planted_chain(drop_nd))
    assert _facts(_layouts(_SHAPES, _runs(_SHAPES))) != _facts(_layouts(_SHAPES, None))
