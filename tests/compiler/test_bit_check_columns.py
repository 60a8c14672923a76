"""The compile's bit check (``planner._mismatches``) compares an entry column whole.

During the compile an entry column whose every row the pass writes, held by the layout book
under one record for its storages and one for its values, is compared in one batch
(``planner._columns_equal``); every other target pair by pair. The answer is the pair-by-pair
answer: a row of a column that differs from its eager value is reported (and the compile then
takes the ungrouped pass), the equal columns are not compared again. Canary: a column taken as
equal without its batch compared.
"""

from __future__ import annotations

from typing import Any

import pytest
import torch

from derivgraph import compile_plan
from derivgraph import planner as planner_module
from derivgraph.column_layout import ColumnLayouts
from derivgraph.compiler.stamp import stamping
from derivgraph.tools.bench_scaling import scaling_model, scaling_spec

LAYERS = 40
ROW = 17  # the row whose storage is spoiled before the check


def _compile(monkeypatch: pytest.MonkeyPatch, spoil: str | None) -> tuple[Any, list[Any]]:
    """Compile the scaling model with ``spoil``'s column's row ``ROW`` made to differ from its
    eager value just before the first bit check; the plan and each check's (answer, the ids
    the columns proved equal)."""
    seen: list[Any] = []
    check, columns = planner_module._mismatches, planner_module._columns_equal
    proved: list[set[str]] = []

    def spy_columns(*args: Any) -> set[str]:
        proved.append(columns(*args))
        return proved[-1]

    def spoiling(plan: Any, values: dict[str, Any], *written: Any) -> list[str]:
        if spoil is not None and not seen:
            column = next(c for c in plan.entries.columns if c.name == spoil)
            with torch.no_grad():
                plan.entries.by_id[column.ids[ROW]].storage.add_(1.0)
        answer = check(plan, values, *written)
        seen.append((answer, proved[-1] if proved else set()))
        return answer

    monkeypatch.setattr(planner_module, "_columns_equal", spy_columns)
    monkeypatch.setattr(planner_module, "_mismatches", spoiling)
    torch.manual_seed(0)
    with stamping(True):
        plan = compile_plan(scaling_model(LAYERS), [scaling_spec()])
    return plan, seen


def _ids(plan: Any, name: str) -> list[str]:
    return list(next(c for c in plan.entries.columns if c.name == name).ids)


def test_equal_columns_are_compared_whole(monkeypatch: pytest.MonkeyPatch) -> None:
    plan, seen = _compile(monkeypatch, None)
    assert len(seen) == 1
    answer, proved = seen[0]
    assert answer == []
    assert proved == set(_ids(plan, "inv")) | set(_ids(plan, "prod"))  # both written columns


@pytest.mark.parametrize("spoil", ["inv", "prod"])
def test_a_row_that_differs_is_reported(monkeypatch: pytest.MonkeyPatch, spoil: str) -> None:
    plan, seen = _compile(monkeypatch, spoil)
    assert len(seen) == 2  # the grouped pass differs: the ungrouped one is checked again
    (answer, proved), (again, _) = seen
    other = "prod" if spoil == "inv" else "inv"
    assert answer == [_ids(plan, spoil)[ROW]]
    assert proved == set(_ids(plan, other))  # the spoiled column pair by pair
    assert again == []
    x = plan.model.layers[ROW + 1]  # the column's rows start at layer 1 (layer 0: template)
    want = 1.0 / x.scale if spoil == "inv" else x.scale * x.weight
    assert torch.equal(getattr(x, spoil), want)


def _cases() -> dict[str, tuple[list[torch.Tensor], bool]]:
    """Runs of tensors, and whether each is one base's slices in order (joined, no copy)."""
    base = torch.arange(12.0).reshape(4, 3)
    cube = torch.arange(16.0).reshape(4, 2, 2)
    part = list(base.unbind(0))
    part[2] = part[2].clone()
    return {
        "unbound": (list(base.unbind(0)), True),
        "unbound, 3-d": (list(cube.unbind(0)), True),
        "reversed": (list(base.unbind(0))[::-1], False),
        "one cloned": (part, False),
        "a prefix": (list(base.unbind(0))[:3], False),
        "transposed pieces": ([t.t() for t in cube.unbind(0)], False),
        "a transposed base": (list(torch.arange(12.0).reshape(3, 4).t().unbind(0)), False),
        "no base": ([torch.zeros(3) for _ in range(4)], False),
        "a base of another element size": (
            list(torch.view_as_real(torch.zeros(4, 3, dtype=torch.complex64)).unbind(0)), False),
        "a longer base": (list(torch.arange(15.0).reshape(5, 3).unbind(0))[:4], False),
        "a later start": (list(torch.arange(15.0).reshape(5, 3)[1:].unbind(0)), False),
        "adjacent bases": (list(torch.arange(6.0).reshape(2, 3).unbind(0))
                           + list(torch.arange(6.0).reshape(2, 3).unbind(0)), False),
    }


@pytest.mark.parametrize("name", list(_cases()))
def test_joined_values_are_their_concatenation(name: str) -> None:
    tensors, joins = _cases()[name]
    joined = planner_module._joined(tensors, tensors[0].shape)
    assert (joined is not None) is joins
    if joined is not None:
        assert torch.equal(joined, torch.cat([t.reshape(-1) for t in tensors]))


def test_row_major_proven_skips_only_the_contiguity_read() -> None:
    """A record that proves the pieces row-major stands for their contiguity; their places
    are still read (a clone among them is not joined)."""
    base = torch.arange(12.0).reshape(4, 3)
    joined = planner_module._joined(list(base.unbind(0)), torch.Size([3]), True)
    assert joined is not None and torch.equal(joined, base.reshape(-1))
    part = list(base.unbind(0))
    part[1] = part[1].clone()
    assert planner_module._joined(part, torch.Size([3]), True) is None


def test_the_compile_joins_the_columns_values(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each compared column's values are one result unbound: the book noted that result
    (``ColumnLayouts.note_whole``), so they are joined without reading their places; with
    nothing noted, the places are read and join them all the same."""
    joined: list[bool] = []
    real = planner_module._joined

    def spy(*args: Any) -> Any:
        got = real(*args)
        joined.append(got is not None)
        return got

    monkeypatch.setattr(planner_module, "_joined", spy)
    _, seen = _compile(monkeypatch, None)
    assert joined == []  # inv, prod: noted where evaluated, no place read
    assert seen[0][0] == [] and len(seen[0][1]) == 2 * (LAYERS - 1)
    monkeypatch.setattr(ColumnLayouts, "note_whole", lambda *args: False)
    _, seen = _compile(monkeypatch, None)
    assert joined == [True, True]  # the same columns, each joined by its places
    assert seen[0][0] == [] and len(seen[0][1]) == 2 * (LAYERS - 1)


def test_columns_written_whole_are_taken_by_their_very_ids_list() -> None:
    """``_pay``'s columns written whole (``whole``: their ids lists) are not looked up in the
    written set again; any other list, an equal copy too, is (canary: a column with a row
    not written is compared whole only on the caller's word for its very list)."""
    from types import SimpleNamespace

    from derivgraph.column_layout import ColumnLayout

    theirs = list(torch.rand(3, 4).unbind(0))
    ours = [t.clone() for t in theirs]
    book = ColumnLayouts()
    record = ColumnLayout(torch.Tensor, torch.float32, torch.Size([4]), torch.device("cpu"),
                          True)
    book.add(theirs, record)
    book.add(ours, record)
    ids = ["a", "b", "c"]
    column = SimpleNamespace(ids=ids, storages=ours, values=theirs)
    values = dict(zip(ids, theirs))
    written, targets = {"a", "c"}, ["a", "c"]  # "b" is no target
    equal = planner_module._columns_equal
    assert equal([column], values, targets, book, written, [ids]) == set(ids)
    assert equal([column], values, targets, book, written, [list(ids)]) == set()
    assert equal([column], values, targets, book, written) == set()
    assert equal([column], values, ids, book, set(ids)) == set(ids)
