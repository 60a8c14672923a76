"""Every kind of change the engine can make to a guarded slot is restored or reported by the
default (watched) restore, and a restore after it finds nothing left to do."""

from __future__ import annotations

from collections.abc import Callable

import pytest
import torch

from derivgraph.guard import Guard
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


@pytest.mark.parametrize("change", list(CHANGES))
def test_any_change_is_restored_or_reported(change):
    layer, guard = _guarded()
    assert guard.restore(layer).restored == []
    CHANGES[change](layer)
    report = guard.restore(layer)
    assert report.restored or report.copied_only or report.recapture, change
    if change not in ("rebuilt owner", "registry"):
        assert report.ok, report.recapture
        again = guard.restore(layer)
        assert again.ok and again.restored == [] and again.copied_only == [], change
