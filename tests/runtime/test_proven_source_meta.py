"""The startup record's sources: ``is_meta`` not read where the build's column proof says.

``planner._record_startup`` reads every source's ``data_ptr()`` (``addresses.read_addresses``:
``address_of`` of each, 0 for a meta tensor, from their words or in one sweep where none is
meta; ``data_ptrs`` with the same mask where not from words). The layout
book holds each stamped source column the build proved (``planner._record_sources``); its
runs among the sources (``ColumnLayouts.source_runs``) whose record proves a plain tensor or
parameter off the meta device are marked proven (``ColumnLayouts.unproven_meta``) and not
asked ``is_meta`` again; every other source is. Canaries: a meta tensor the mask marks proven
is taken on the caller's word (so the mask is what decides), one it does not mark is read.
"""

from __future__ import annotations

from typing import Any

import pytest
import torch

from derivgraph import planner as planner_module
from derivgraph.addresses import address_of, data_ptrs
from derivgraph.column_layout import ColumnLayout, ColumnLayouts
from derivgraph.compiler.stamp import stamping
from derivgraph.tools.bench_scaling import scaling_model, scaling_spec


class _OwnPtr(torch.Tensor):
    """A tensor class whose ``data_ptr()`` says 5 (so a meta one read as 0 is told apart)."""

    def data_ptr(self) -> int:  # type: ignore[override]
        return 5


def test_the_mask_decides_which_tensors_are_asked() -> None:
    meta = torch.empty(2, device="meta").as_subclass(_OwnPtr)
    plain = torch.rand(3)
    values = [plain, meta]
    assert data_ptrs(values) == [plain.data_ptr(), 0] == list(map(address_of, values))
    assert data_ptrs(values, b"\x01\x01") == [plain.data_ptr(), 0]
    assert data_ptrs(values, b"\x00\x01") == [plain.data_ptr(), 0]  # the meta one read
    assert data_ptrs(values, b"\x01\x00") == [plain.data_ptr(), 5]  # the caller's word
    assert data_ptrs(values, b"\x00") == [plain.data_ptr(), 0]  # not one byte each: all read


def _record(device: str = "cpu", cls: type = torch.Tensor) -> ColumnLayout:
    return ColumnLayout(cls, torch.float32, torch.Size([4]), torch.device(device), True)


def test_only_runs_of_off_meta_plain_source_columns_are_proven() -> None:
    sources = [torch.rand(4) for _ in range(8)]
    book = ColumnLayouts()
    book.add(sources[0::2], _record(), source=True)  # a run at step 2
    book.add(sources[1:4:2], _record("meta"), source=True)  # proves no device off meta
    book.add([torch.rand(4), torch.rand(4)], _record(), source=True)  # not read: no run
    book.add(sources[5:7], _record())  # no source column
    runs = book.source_runs(sources)
    assert [run for _, run in runs] == [slice(0, 7, 2), slice(1, 4, 2)]
    assert book.unproven_meta(len(sources), runs) == bytearray([0, 1, 0, 1, 0, 1, 0, 1])
    assert book.unproven_meta(len(sources), []) == bytearray(b"\x01" * 8)


def test_the_startup_record_skips_the_proven_sources(monkeypatch: pytest.MonkeyPatch) -> None:
    masks: list[tuple[list[Any], Any, list[int]]] = []
    real = planner_module.read_addresses

    def spy(values: Any, unproven: Any = None) -> tuple[list[int], Any]:
        got, words = real(values, unproven)
        masks.append((list(values), unproven, got))
        return got, words

    monkeypatch.setattr(planner_module, "read_addresses", spy)
    with stamping(True):
        plan = planner_module.compile_plan(scaling_model(10), [scaling_spec()])
    values, unproven, got = masks[0]
    assert got == list(map(address_of, values))
    assert unproven is not None and unproven.count(0) == 2 * 9  # scale, weight of rows 1-9
    proven = [v for v, mark in zip(values, unproven) if not mark]
    assert {id(t) for t in proven} == {id(getattr(layer, name)) for layer in
                                       list(plan.model.layers)[1:]
                                       for name in ("scale", "weight")}
