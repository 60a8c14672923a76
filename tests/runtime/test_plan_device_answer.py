"""Whether a plan's bound tensors live on CUDA (``Plan._on_cuda``), answered by column records.

The compile's ``prepare`` asks it once (a full run's launch order). During the compile an entry
column whose storages the layout book holds under one record of a plain class answers by the
record's device; every other entry's storage is read (the generic entries, a column without
such a record, any plan asked after the compile: the book is gone). Asserted on the stamped
compile (the columns' storages not read, the answer the every-entry sweep's) and on planted
books: a record of the CUDA device answers True without a read, a record of another class is
not taken. Canaries: the record ignored, or taken for any class, turn tests here red.
"""

from __future__ import annotations

from operator import attrgetter
from typing import Any

import pytest
import torch

from derivgraph.column_layout import ColumnLayout, ColumnLayouts
from derivgraph.compiler.stamp import stamping
from derivgraph.planner import compile_plan
from derivgraph.runtime import plan as plan_module
from derivgraph.tools.bench_scaling import scaling_spec
from tests.compiler.test_stamp_reload import _model


class _Counted:
    """``attrgetter("is_cuda")`` that counts the tensors it reads."""

    def __init__(self) -> None:
        self.read = 0
        self._get = attrgetter("is_cuda")

    def __call__(self, t: Any) -> Any:
        self.read += 1
        return self._get(t)


def _every_storage_on_cuda(plan: Any) -> bool:
    storages = [e.storage for e in plan.entries.values()]
    return any(t.is_cuda for t in storages if isinstance(t, torch.Tensor))


def _plan() -> Any:
    with stamping(True):
        plan = compile_plan(_model(), [scaling_spec()])
    assert plan.entries.columns
    return plan


def test_the_compile_reads_no_recorded_column(monkeypatch: pytest.MonkeyPatch) -> None:
    counted = _Counted()
    monkeypatch.setattr(plan_module, "_IS_CUDA", counted)
    with stamping(True):
        plan = compile_plan(_model(), [scaling_spec()])
    generic = sum(isinstance(e.storage, torch.Tensor) for e in plan.entries.generic.values())
    assert plan._cuda is False and plan._cuda == _every_storage_on_cuda(plan)
    assert counted.read == generic  # the columns (every row's storage) answered by records


def test_after_the_compile_every_storage_is_read(monkeypatch: pytest.MonkeyPatch) -> None:
    plan = _plan()
    counted = _Counted()
    monkeypatch.setattr(plan_module, "_IS_CUDA", counted)
    plan._cuda = None
    assert plan._on_cuda() is False
    assert counted.read == sum(isinstance(e.storage, torch.Tensor)
                               for e in plan.entries.values())


def _planted(plan: Any, cls: type, device: str) -> ColumnLayouts:
    """A book recording every column's storages under a record of ``cls`` on ``device``."""
    book = ColumnLayouts()
    for column in plan.entries.columns:
        first = column.storages[0]
        book.add(column.storages, ColumnLayout(cls, first.dtype, first.shape,
                                               torch.device(device), True))
    return book


def test_a_plain_record_on_cuda_answers_true() -> None:
    plan = _plan()
    plan.tensors.layouts, plan._cuda = _planted(plan, torch.Tensor, "cuda"), None
    try:
        assert plan._on_cuda() is True  # the record's device (a planted lie: not read)
    finally:
        plan.tensors.layouts = None


@pytest.mark.parametrize("cls", [type("Sub", (torch.Tensor,), {}),
                                 type("SubParameter", (torch.nn.Parameter,), {})],
                         ids=["tensor_subclass", "parameter_subclass"])
def test_a_record_of_another_class_is_not_taken(cls: type) -> None:
    plan = _plan()
    plan.tensors.layouts, plan._cuda = _planted(plan, cls, "cuda"), None
    try:
        assert plan._on_cuda() is False  # every storage read: all on CPU
    finally:
        plan.tensors.layouts = None
