"""The startup alias of an entry column's row, made where it is first read.

A derived tensor the engine may re-point (``t.data = new``) keeps a detached alias of its
startup storage, which the refill puts back (``restore_storage``). An entry column's rows whose
storages the compile's layout book records (plain, row-major, off the meta device) keep their
storage (``untyped_storage()``) instead, in one record per column (``StartupColumn``, shared
by the rows: no record per row); :meth:`Entry.startup_alias` makes the row's alias on the
first read. The oracle is the rule it defers: ``detach()`` of the startup storage,
taken here before anything is re-pointed, compared fact by fact (type, dtype, shape, strides,
offset, device, storage, values); and a re-pointed stamped plan is restored as the plain
compile's (every alias detached at startup) is. The layers' tensors are 3-D with a size-1 dim
(their strides are not the trivial 1-D ones); CPU, and CUDA under ``-m gpu``.
"""

from __future__ import annotations

import gc
from typing import Any

import pytest
import torch
from torch import nn

from derivgraph import compile_plan
from derivgraph.compiler.stamp import stamping
from derivgraph.runtime.entry import StartupColumn
from derivgraph.tools.bench_scaling import scaling_spec

LAYERS = 10
SHAPE = (2, 1, 4)
DEVICES = ["cpu", pytest.param("cuda", marks=pytest.mark.gpu)]


class ScalingLayer(nn.Module):  # the scaling spec's target class, with 3-D tensors
    def __init__(self, seed: int, device: str) -> None:
        super().__init__()
        rng = torch.Generator().manual_seed(seed)
        scale, weight = torch.rand(SHAPE, generator=rng) + 0.5, torch.rand(SHAPE, generator=rng)
        self.scale = nn.Parameter(scale.to(device), requires_grad=False)
        self.weight = nn.Parameter(weight.to(device), requires_grad=False)


class Stack(nn.Module):
    def __init__(self, device: str) -> None:
        super().__init__()
        self.layers = nn.ModuleList(ScalingLayer(i, device) for i in range(LAYERS))


def _compile(stamped: bool, device: str = "cpu") -> Any:
    with stamping(stamped):
        return compile_plan(Stack(device), [scaling_spec()])


def _held(plan: Any) -> list[Any]:
    """The entries that keep a startup alias, in order."""
    return [e for e in plan.entries.values() if e.startup_data is not None]


def _facts(t: torch.Tensor) -> tuple[Any, ...]:
    return (type(t), t.dtype, tuple(t.shape), t.stride(), t.storage_offset(), t.device,
            t.requires_grad, t.is_contiguous(), t.data_ptr(), t.untyped_storage()._cdata)


def test_a_column_row_keeps_its_storage_and_record_until_read() -> None:
    plan = _compile(True)
    rows = [e for e in _held(plan) if not e.id.startswith("layers.0.")]
    assert len(rows) == 3 * (LAYERS - 1)
    # one record per column, shared by its rows (no record per row), in row order
    records = {id(e.startup_data): e.startup_data for e in rows}
    assert len(records) == 3
    assert all(type(r) is StartupColumn for r in records.values())
    for record in records.values():
        column = [e for e in rows if e.startup_data is record]
        assert record.ids == [e.id for e in column] and len(record.storages) == LAYERS - 1
    for entry in rows:
        record = entry.startup_data
        storage, layout = record.storages[record.ids.index(entry.id)], record.layout
        assert isinstance(storage, torch.UntypedStorage)
        assert storage._cdata == entry.storage.untyped_storage()._cdata
        assert (layout.type, layout.dtype, tuple(layout.shape), layout.contiguous) == \
            (torch.Tensor, entry.storage.dtype, tuple(entry.storage.shape), True)
        alias = entry.startup_alias()
        assert isinstance(alias, torch.Tensor) and alias is not entry.storage
        assert entry.startup_data is alias and entry.startup_alias() is alias  # kept
    template = [e for e in _held(plan) if e.id.startswith("layers.0.")]
    assert template and all(isinstance(e.startup_data, torch.Tensor) for e in template)


@pytest.mark.parametrize("device", DEVICES)
def test_the_alias_made_later_is_the_detached_alias(device: str) -> None:
    plan = _compile(True, device)
    held = _held(plan)
    detached = [e.storage.detach() for e in held]  # the rule, before anything is read
    assert sum(type(e.startup_data) is StartupColumn for e in held) == 3 * (LAYERS - 1)
    order = list(zip(held, detached))
    for entry, reference in order[::-1]:  # the rows read out of order: each its own row's
        alias = entry.startup_alias()
        assert _facts(alias) == _facts(reference), entry.id
        assert torch.equal(alias, reference)


def _repoint(plan: Any) -> list[int]:
    """Every held tensor re-pointed to new storage of another shape (an engine's ``.data =``),
    no reference to its startup storage left but the plan's; their startup addresses."""
    ptrs = []
    with torch.no_grad():
        for entry in _held(plan):
            ptrs.append(entry.startup_ptr)
            entry.storage.data = torch.zeros(3, 5, dtype=entry.storage.dtype,
                                             device=entry.storage.device)
    gc.collect()
    return ptrs


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("read_first", [False, True], ids=["unread", "read"])
def test_a_repointed_plan_is_restored_as_the_plain_compile_restores_it(read_first: bool,
                                                                        device: str) -> None:
    plain, stamped = _compile(False, device), _compile(True, device)
    if read_first:  # the aliases made before the re-pointing: the same answer
        for entry in _held(stamped):
            entry.startup_alias()
    assert [e.id for e in _held(plain)] == [e.id for e in _held(stamped)]
    before = {e.id: _facts(e.storage) for e in _held(plain)}
    ptrs = {plan: _repoint(plan) for plan in (plain, stamped)}
    reports = {plan: plan.refill(verify=True) for plan in (plain, stamped)}
    assert reports[stamped].restored == reports[plain].restored
    assert len(reports[stamped].restored) == 4 * LAYERS - LAYERS  # every held tensor
    for plan in (plain, stamped):
        assert reports[plan].moved == []
        held = _held(plan)
        assert [e.storage.data_ptr() for e in held] == ptrs[plan]
        for entry in held:
            facts = _facts(entry.storage)
            assert facts[:8] == before[entry.id][:8], entry.id
    for a, b in zip(_held(plain), _held(stamped)):
        assert torch.equal(a.storage, b.storage), a.id
    layers = stamped.model.layers
    for i, layer in enumerate(layers):
        assert torch.equal(layer.inv, 1.0 / layer.scale)
        assert torch.equal(layer.prod, layer.scale * layer.weight)
        assert torch.equal(layer.strides, torch.full([SHAPE[0]], 7, dtype=torch.int64,
                                                     device=device)), i
