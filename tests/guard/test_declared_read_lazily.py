"""The tensors a plan declares, handed to the guard's restore as a function: read only when the
restore found something changed (the common reload reads none), and then never reported as new."""

from __future__ import annotations

from collections.abc import Callable

import pytest
import torch

from derivgraph.guard import Change, Guard
from tests.guard.test_guard import Layer


def _counted(read: Callable[[], list[torch.Tensor]]) -> tuple[Callable[[], list[torch.Tensor]],
                                                               list[int]]:
    calls: list[int] = []

    def declared() -> list[torch.Tensor]:
        calls.append(1)
        return read()

    return declared, calls


def _unchanged() -> list[torch.Tensor]:
    raise AssertionError("the declared tensors were read on a reload that changed nothing")


@pytest.mark.parametrize("full", [False, True], ids=["resolved", "full-walk"])
def test_a_declared_tensor_the_engine_rebuilt_is_read_and_not_reported(full: bool) -> None:
    layer = Layer()
    layer.post_load()
    guard = Guard()
    guard.snapshot(layer, declared=[layer.kernel.workspace])
    layer.post_load()  # a new kernel: a new workspace, which the plan declares now
    declared, calls = _counted(lambda: [layer.kernel.workspace])
    report = guard.restore(layer, full=full, declared=declared)
    assert calls == [1]
    assert all(c.path != "kernel.workspace" for c in [*report.restored, *report.recapture])


def test_the_same_rebuild_without_the_declared_tensors_reports_it_new() -> None:
    """The control: the rebuilt workspace is a new tensor unless the function names it."""
    layer = Layer()
    layer.post_load()
    guard = Guard()
    guard.snapshot(layer, declared=[layer.kernel.workspace])
    layer.post_load()
    declared, calls = _counted(list)
    report = guard.restore(layer, declared=declared)
    assert calls == [1]
    assert ("kernel.workspace", Change.NEW) in [(c.path, c.change) for c in report.recapture]


def test_a_reload_that_changed_nothing_reads_no_declared_tensor() -> None:
    layer = Layer()
    layer.post_load()
    guard = Guard()
    guard.snapshot(layer, declared=[layer.kernel.workspace])
    layer.load(1)  # weights written in place: every slot as it was
    for _ in range(3):
        report = guard.restore(layer, declared=_unchanged)
        assert report.ok and not report.restored


def test_a_reload_that_rebound_a_guarded_slot_reads_them_once() -> None:
    layer = Layer()
    layer.post_load()
    guard = Guard()
    guard.snapshot(layer, declared=[layer.kernel.workspace])
    kept = layer.inv
    layer.register_buffer("inv", kept.clone(), persistent=False)  # rebound, same layout
    declared, calls = _counted(lambda: [layer.kernel.workspace])
    report = guard.restore(layer, declared=declared)
    assert calls == [1] and layer.inv is kept
    assert [(c.path, c.change) for c in report.restored] == [("inv", Change.REBOUND)]
