"""An alias column's startup addresses taken from the sources' addresses the record read.

``planner._record_startup`` reads every source's ``data_ptr()`` once; an
:class:`~derivgraph.runtime.entry_columns.AliasColumn`'s rows hold sources (each its input's
value), so where its storages are a run of those very objects, of plain tensor classes, it
takes their addresses from that read (``column_layout.read_at_run``) instead of reading them
again. Anything else (not a run of the read objects, a class with a ``data_ptr`` of its own)
is read as before. Canaries: planted addresses are taken only on the caller's word for a run
of plain tensors.
"""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest
import torch
from torch import nn

from derivgraph import planner as planner_module
from derivgraph.column_layout import read_at_run
from derivgraph.compiler.stamp import stamping
from derivgraph.runtime import entry_columns as entry_columns_module
from derivgraph.runtime.entry_columns import AliasColumn
from derivgraph.tools.bench_scaling import scaling_model, scaling_spec


class _OwnPtr(torch.Tensor):
    """A tensor class whose ``data_ptr()`` is its own."""

    def data_ptr(self) -> int:  # type: ignore[override]
        return 7


def _column(storages: list[Any]) -> AliasColumn:
    entries = [SimpleNamespace(storage=s, startup_ptr=0) for s in storages]
    ids = [f"l.{i}.a" for i in range(len(storages))]
    return AliasColumn("l.0.a", "a", ids, entries, [object()] * len(storages))  # type: ignore[arg-type]


def _ptrs(column: AliasColumn) -> list[int]:
    return [e.startup_ptr for e in column.entries]


def test_read_at_run_answers_a_run_only() -> None:
    items = [object() for _ in range(9)]
    found = list(range(100, 109))
    assert read_at_run(items, found, items[1::3]) == [101, 104, 107]
    assert read_at_run(items, found, [items[1], items[4], items[6]]) is None  # no one step
    assert read_at_run(items, found, [object()]) is None
    assert read_at_run(items, found[:-1], items[:2]) is None  # an answer per item only


def test_a_run_of_plain_sources_takes_the_read_addresses() -> None:
    sources = [nn.Parameter(torch.rand(4), requires_grad=False) for _ in range(6)]
    planted = [1000 + i for i in range(6)]  # the caller's word: taken where it is a run
    column = _column(sources[1::2])
    column.record_startup(None, (sources, planted))
    assert _ptrs(column) == planted[1::2]
    column.record_startup(None)  # nothing read: each read here
    assert _ptrs(column) == [s.data_ptr() for s in sources[1::2]]


def test_no_run_or_own_data_ptr_is_read_again() -> None:
    sources = [torch.rand(4) for _ in range(6)]
    planted = [1000 + i for i in range(6)]
    column = _column([s.clone() for s in sources[1::2]])  # equal, other objects
    column.record_startup(None, (sources, planted))
    assert _ptrs(column) == [s.data_ptr() for s in column.storages]
    own = [torch.rand(4).as_subclass(_OwnPtr) for _ in range(3)]
    column = _column(own)
    column.record_startup(None, (own, [1, 2, 3]))
    assert _ptrs(column) == [torch.Tensor.data_ptr(t) for t in own]  # as read before


def test_the_compile_takes_the_alias_column_addresses(monkeypatch: pytest.MonkeyPatch) -> None:
    taken: list[Any] = []

    def spy(*args: Any) -> Any:
        taken.append(read_at_run(*args))
        return taken[-1]

    monkeypatch.setattr(entry_columns_module, "read_at_run", spy)
    with stamping(True):
        plan = planner_module.compile_plan(scaling_model(10), [scaling_spec()])
    aliases = [c for c in plan.entries.columns if isinstance(c, AliasColumn)]
    assert len(aliases) == 1 and len(taken) == 1 and taken[0] is not None
    assert _ptrs(aliases[0]) == [s.data_ptr() for s in aliases[0].storages]
    assert _ptrs(aliases[0]) == [plan.source_ptrs[f"layers.{i}.scale"][1] for i in range(1, 10)]
