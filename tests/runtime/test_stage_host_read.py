"""A refill reads its stage buffers (derived Python scalars) on the host through their NumPy
views where NumPy gives the very numbers torch's ``tolist`` gives (:func:`host_tolist`): the
same Python numbers for every such dtype and special value, the current elements after the
pass wrote in place (a view, not a copy), and torch's own ``tolist`` for every other buffer."""

from __future__ import annotations

import math

import pytest
import torch

from derivgraph.runtime.storage import _NUMPY_TOLIST, host_tolist
from tests.runtime.test_scalar_stages import Scales, _expected, _now, _plan

SPECIAL = [0.5, -0.0, 0.0, math.inf, -math.inf, math.nan, 1e-45, 3.4028234663852886e38, -2.25]


def _same(a: list, b: list) -> bool:
    """Equal as Python numbers, type and sign bit included (NaN equal to NaN)."""
    return len(a) == len(b) and all(
        type(x) is type(y) and (x == y or (x != x and y != y))
        and (not isinstance(x, float) or math.copysign(1, x) == math.copysign(1, y))
        for x, y in zip(a, b))


@pytest.mark.parametrize("dtype", sorted(_NUMPY_TOLIST, key=str))
def test_the_numpy_read_gives_torch_s_numbers(dtype: torch.dtype) -> None:
    if dtype.is_floating_point:
        buffer = torch.tensor(SPECIAL, dtype=dtype)
    elif dtype == torch.bool:
        buffer = torch.tensor([True, False, True])
    else:
        info = torch.iinfo(dtype)
        buffer = torch.tensor([info.min, -1 if info.min < 0 else 0, 0, 1, info.max], dtype=dtype)
    read = host_tolist(buffer)
    assert getattr(read, "__self__", None) is not buffer  # the NumPy view's
    assert _same(read(), buffer.tolist())
    buffer.fill_(1)  # written in place (as the pass's stage copies do): read as it is now
    assert _same(read(), buffer.tolist())


@pytest.mark.parametrize("make", [
    lambda: torch.tensor([0.5, 2.0], dtype=torch.bfloat16),
    lambda: torch.tensor([0.5, 2.0], dtype=torch.float16),
    lambda: torch.tensor([0.5 + 1j]),
    lambda: torch.arange(6.0)[::2],  # not contiguous
    lambda: torch.tensor([1.0, 2.0], requires_grad=True),
    lambda: torch.empty(2, device="meta"),
])
def test_other_buffers_are_read_by_torch(make) -> None:  # noqa: ANN001
    buffer = make()
    assert host_tolist(buffer) == buffer.tolist  # torch's own read, bound to the buffer


def test_refills_report_a_changed_scalar_read_through_the_view() -> None:
    """The plan's own stage buffers, end to end: equal numbers set nothing, a changed one is
    read (bit for bit) and reported."""
    model = Scales()
    plan = _plan(model)
    plan.run()
    rows = next(r for r in plan.tensors._stage_rows.values() if r)
    assert all(getattr(read, "__self__", None) is not None for read, _g, _e in rows)
    assert plan.run().recapture_required == []
    for value in (3.0, -0.0, 5.0, math.nan, 7.0):  # each differs (!=) from the one before
        model.load({"s0": value})
        report = plan.run()
        assert _now(model) == _expected(model)
        assert report.recapture_required == ["s0_max"]
    assert plan.run().recapture_required == []
