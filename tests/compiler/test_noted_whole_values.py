"""A column's values noted as one result's slices, and a source column read in one sweep.

``compiler.columns._column`` evaluates a column as one call and unbinds its result; the layout
book notes that result (``ColumnLayouts.note_whole``) so the bit check joins the values
(``ColumnLayouts.whole``) without reading each one's place (``planner._joined``, the rule it
stands for). Only a plain, row-major tensor that is no view, of as many non-empty slices as
there are values, is noted, and only its very values, in order, are answered. ``_operands``
reads a source column none of whose paths is in the env from the build's reads in one
sweep; a path the reads do not hold is read by ``read_source`` (the per-ref loop).
"""

from __future__ import annotations

from typing import Any

import pytest
import torch
from torch import nn

from derivgraph import planner as planner_module
from derivgraph.column_layout import ColumnLayouts
from derivgraph.compiler import columns as columns_module


def _noted(whole: torch.Tensor) -> tuple[ColumnLayouts, list[torch.Tensor], bool]:
    book, values = ColumnLayouts(), list(whole.unbind(0))
    return book, values, book.note_whole(values, whole)


def test_a_noted_result_is_its_values_joined() -> None:
    whole = torch.arange(24.0).reshape(6, 4).clone()  # no view
    book, values, noted = _noted(whole)
    assert noted
    joined = book.whole(values)
    assert joined is not None
    assert torch.equal(joined, torch.cat(values))
    assert joined.data_ptr() == whole.data_ptr()  # no copy
    ruled = planner_module._joined(values, values[0].shape)  # the rule it stands for
    assert ruled is not None and torch.equal(joined, ruled)


def _cases() -> dict[str, torch.Tensor]:
    return {
        "a view": torch.arange(28.0).reshape(7, 4)[1:],
        "not row-major": torch.rand(4, 6).t().clone(memory_format=torch.preserve_format),
        "empty slices": torch.empty(5, 0),
        "a parameter": nn.Parameter(torch.rand(5, 3), requires_grad=False),
        "0-dim": torch.tensor(1.0),
    }


@pytest.mark.parametrize("name", list(_cases()))
def test_only_a_plain_row_major_whole_is_noted(name: str) -> None:
    whole = _cases()[name]
    book = ColumnLayouts()
    values = list(whole.unbind(0)) if whole.dim() else [whole]
    assert not book.note_whole(values, whole)
    assert book.whole(values) is None


def test_a_whole_of_another_count_is_not_noted() -> None:
    whole = torch.arange(12.0).reshape(4, 3).clone()
    values = list(whole.unbind(0))
    book = ColumnLayouts()
    assert not book.note_whole(values[:3], whole)
    assert book.whole(values[:3]) is None


def test_only_the_noted_values_in_order_are_answered() -> None:
    book, values, noted = _noted(torch.arange(15.0).reshape(5, 3).clone())
    assert noted
    swapped = list(values)
    swapped[2] = values[2].clone()  # equal values, another tensor
    assert book.whole(swapped) is None
    assert book.whole(values[:4]) is None
    assert book.whole(values[::-1]) is None
    assert book.whole([]) is None
    assert book.whole(values) is not None


def test_the_column_notes_its_result() -> None:
    """``_column`` with a book notes the result it unbound; the answer is the bits of the
    per-row values (canary: the compile's bit check takes it, see
    ``test_bit_check_columns.test_the_compile_joins_the_columns_values``)."""
    from derivgraph.compiler.stamp import stamping
    from derivgraph.tools.bench_scaling import scaling_model, scaling_spec

    seen: list[Any] = []
    real = ColumnLayouts.note_whole

    def spy(self: ColumnLayouts, tensors: Any, whole: torch.Tensor) -> bool:
        seen.append((list(tensors), whole, real(self, tensors, whole)))
        return seen[-1][2]

    mp = pytest.MonkeyPatch()
    mp.setattr(ColumnLayouts, "note_whole", spy)
    try:
        with stamping(True):
            planner_module.compile_plan(scaling_model(12), [scaling_spec()])
    finally:
        mp.undo()
    assert len(seen) == 2 and all(ok for _, _, ok in seen)  # inv, prod
    for values, whole, _ in seen:
        assert torch.equal(whole.reshape(-1), torch.cat(values))


def test_source_operands_not_held_are_read() -> None:
    """A source column none of whose paths is in the env: read from ``sources`` in one
    sweep where it holds every path as a tensor; a path it lacks is read by ``read_source``
    (canary: the sweep alone would answer None for it)."""
    held = {f"l.{i}.w": torch.full((2,), float(i)) for i in range(4)}
    late = torch.full((2,), 9.0)
    reads: list[str] = []

    def read_source(path: str) -> Any:
        reads.append(path)
        return late if path == "l.4.w" else held[path]

    refs = [*held, "l.4.w"]
    env: dict[str, Any] = {}
    found = columns_module._operands(env, read_source, refs, True, held)
    assert found is not None and found[-1] is late
    assert all(a is b for a, b in zip(found, held.values()))
    assert "l.4.w" in reads and env["l.4.w"] is late
    env = {}
    assert columns_module._operands(env, read_source, list(held), True, held) == \
        list(held.values())
    assert env.keys() == held.keys() and all(env[k] is v for k, v in held.items())
    odd = {"l.0.w": 3}  # held, not a tensor: the per-ref loop reads it and answers None
    assert columns_module._operands({}, odd.__getitem__, ["l.0.w"], True, odd) is None


class _Counted(list):  # type: ignore[type-arg]
    """A list that counts the sweeps over it."""

    sweeps = 0

    def __iter__(self) -> Any:
        type(self).sweeps += 1
        return super().__iter__()


def test_the_very_recorded_sequence_is_answered_without_a_sweep() -> None:
    """``common`` and ``addresses`` of the very sequence a column was recorded or noted with
    answer without sweeping it (the sweep would compare it with itself); any other sequence,
    an equal copy too, is swept, and a reordered one is not taken as the noted column."""
    from derivgraph.column_layout import ColumnLayout

    rows = _Counted(torch.rand(4) for _ in range(5))
    record = ColumnLayout(torch.Tensor, torch.float32, torch.Size([4]), torch.device("cpu"),
                          True)
    book = ColumnLayouts()
    book.add(rows, record)
    ptrs = [t.data_ptr() for t in rows]
    book.note_addresses(rows, ptrs)
    _Counted.sweeps = 0
    assert book.common(rows) is record and book.addresses(rows) is ptrs
    assert _Counted.sweeps == 0
    copy = _Counted(rows)
    _Counted.sweeps = 0
    assert book.common(copy) is record and book.addresses(copy) is ptrs
    assert _Counted.sweeps == 4  # each call: the copy and the recorded sequence
    assert book.addresses(_Counted(reversed(rows))) is None
