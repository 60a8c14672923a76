"""The guard's precompiled slot table: "nothing changed" in three sweeps, and never when
something did (each kind of slot, an object on the way, a storage re-pointed in place)."""

from __future__ import annotations

from collections.abc import Callable

import pytest
import torch

from derivgraph.guard import Guard
from derivgraph.guard.slots import SlotTable
from tests.guard.test_guard import Kernel, Layer


def _guarded() -> tuple[Layer, Guard]:
    layer = Layer()
    layer.post_load()
    guard = Guard()
    guard.snapshot(layer)
    return layer, guard


def _clone_list_item(layer: Layer) -> None:
    layer.kernel.strides[1] = layer.kernel.strides[1].clone()


def _clone_dict_item(layer: Layer) -> None:
    layer.kernel.table["perm"] = layer.kernel.table["perm"].clone()


def _clone_int_key(layer: Layer) -> None:
    layer.kernel.table[3] = layer.kernel.table[3].clone()


def _clone_attribute(layer: Layer) -> None:
    layer.kernel.workspace = layer.kernel.workspace.clone()


def _clone_closure(layer: Layer) -> None:
    cell = layer.kernel.apply.__closure__[0]
    cell.cell_contents = cell.cell_contents.clone()


def _clone_buffer(layer: Layer) -> None:
    layer._buffers["inv"] = layer._buffers["inv"].clone()


def _repoint_storage(layer: Layer) -> None:
    with torch.no_grad():
        layer.kernel.workspace.data = layer.kernel.workspace.clone()


def _rebuild_kernel(layer: Layer) -> None:
    layer.kernel = Kernel(layer.weight)  # every slot under it is new


def _replace_registry(layer: Layer) -> None:
    layer.__dict__["_buffers"] = {"inv": layer._buffers["inv"].clone()}


CHANGES: dict[str, Callable[[Layer], None]] = {
    "list item": _clone_list_item, "dict item": _clone_dict_item, "int key": _clone_int_key,
    "attribute": _clone_attribute, "closure cell": _clone_closure, "buffer": _clone_buffer,
    "storage": _repoint_storage, "rebuilt owner": _rebuild_kernel,
    "registry": _replace_registry}


def test_nothing_changed_takes_no_chain_walk(monkeypatch):
    layer, guard = _guarded()
    walked: list[int] = []
    resolved = Guard._plan_resolved
    monkeypatch.setattr(Guard, "_plan_resolved",
                        lambda self, *a: walked.append(1) or resolved(self, *a))
    for _ in range(3):
        report = guard.restore(layer)
        assert report.ok and report.restored == [] and report.copied_only == []
    assert walked == []
    table = guard._table()
    assert table.unchanged() and len(table.tensors) > 0
    assert table.slow  # the closure cell, the partial's args and the tuple item: one by one


@pytest.mark.parametrize("change", list(CHANGES))
def test_any_change_goes_to_the_chain_walk(change):
    layer, guard = _guarded()
    assert guard._table().unchanged()
    CHANGES[change](layer)
    assert not guard._table().unchanged()
    report = guard.restore(layer)  # the reference restore brings the slot back, or reports it
    assert report.restored or report.copied_only or report.recapture, change
    if change not in ("rebuilt owner", "registry"):
        assert report.ok and guard._table().unchanged()


def test_canary_a_table_that_says_unchanged_leaves_the_slot_rebound(monkeypatch):
    layer, guard = _guarded()
    kept = layer.kernel.workspace
    _clone_attribute(layer)
    monkeypatch.setattr(SlotTable, "unchanged", lambda self: True)
    guard.restore(layer)
    assert layer.kernel.workspace is not kept  # red: the rebound slot was not restored
