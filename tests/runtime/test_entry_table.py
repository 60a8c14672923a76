"""``Plan.entries`` as a read-only Mapping (:class:`~derivgraph.runtime.entry.EntryTable`), and
the readers that take a column's answer from its entry column instead of iterating entries.

A stamped stack beside two toys of another spec (a Python scalar and an attribute each)
compiles into a table of 28 entries: 5 columns and 7 generic entries. Every column answer (the
storages the guard declares, the spec names, the adopted count, the scalars, the holders'
slow-path key list, the generic entries) equals its per-entry form, after the compile, after a
second compile that adopts every tensor, and after a relayout that gives a column's rows new
storage. The mapping is the compile's order (the same as with stamping off) and refuses writes.
Canaries: with the relayout's :meth:`EntryTable.open_columns` planted away, the columns keep
layer 3's old tensors (the relayout's pass fails, or the answers differ): red; with
:meth:`EntryTable.storages` planted to skip the generic entries, red.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from typing import Any

import pytest
import torch
from torch import nn

from derivgraph import DerivedTensor, Spec, Target, compile_plan
from derivgraph.compiler.stamp import stamping
from derivgraph.errors import PassFault
from derivgraph.runtime.entry import EntryTable
from derivgraph.spec.kinds import TensorKind
from derivgraph.tools.bench_scaling import scaling_model, scaling_spec
from tests.toy import Toy

_TOY = Spec(name="peak", target=Target(module_class=["Toy"]), params={},
            derived=[DerivedTensor(name="peak", kind="scalar", formula="amax(scale)"),
                     DerivedTensor(name="inv2", kind="attribute", formula="1.0 / scale")])


def _model() -> nn.Module:
    root = nn.Module()
    root.stack = scaling_model(6)
    root.toys = nn.ModuleList([Toy(), Toy()])
    return root


def _compile(model: nn.Module | None = None, stamp: bool = True) -> Any:
    with stamping(stamp):
        return compile_plan(_model() if model is None else model, [scaling_spec(), _TOY])


def _answers_hold(plan: Any) -> None:
    """Every column answer equals its per-entry form."""
    entries = plan.entries
    values = list(entries.values())
    assert Counter(map(id, entries.storages())) == Counter(id(e.storage) for e in values)
    assert Counter(map(id, plan.declared_storages())) == Counter(map(id, plan.declared().values()))
    assert entries.spec_names() == {e.node.bound.spec.name for e in values}
    assert entries.adopted() == sum(e.adopted for e in values)
    scalars = [k for k, e in entries.items() if e.node.kind is TensorKind.SCALAR]
    assert entries.scalars() == plan.not_refillable() == scalars
    assert plan.holders._not_scalars() == [k for k in entries if k not in scalars]
    in_columns = {i for c in entries.columns for i in c.ids}
    assert list(entries.generic) == [k for k in entries if k not in in_columns]
    for column in entries.columns:
        assert [entries[i] for i in column.ids] == column.entries
        assert all(e.storage is s for e, s in zip(column.entries, column.storages))
        assert not any(e.adopted or e.node.kind is TensorKind.SCALAR for e in column.entries)


def test_the_table_is_a_read_only_mapping_in_the_compiles_order() -> None:
    plan = _compile()
    entries = plan.entries
    assert isinstance(entries, Mapping) and isinstance(entries, EntryTable)
    assert not isinstance(entries, dict)
    assert (len(entries.columns), len(entries.generic)) == (5, 7)
    assert list(entries) == list(_compile(stamp=False).entries)
    assert len(plan) == len(entries) == 28 and "toys.1.peak" in entries
    assert entries.get("nothing") is None and entries["stack.layers.2.inv"].id == \
        "stack.layers.2.inv"
    with pytest.raises(TypeError):
        entries["stack.layers.2.inv"] = entries["stack.layers.1.inv"]  # type: ignore[index]
    with pytest.raises(AttributeError):
        entries.pop("stack.layers.2.inv")  # type: ignore[attr-defined]
    _answers_hold(plan)
    assert entries.spec_names() == {"scaling", "peak"}
    assert plan.not_refillable() == ["toys.0.peak", "toys.1.peak"]


def test_a_plan_without_columns_answers_from_its_entries() -> None:
    plan = _compile(stamp=False)
    assert plan.entries.columns == () and len(plan.entries.generic) == 28
    _answers_hold(plan)


def test_a_compile_that_adopts_counts_its_adopted_entries() -> None:
    model = _model()
    _compile(model)
    again = _compile(model)
    assert again.entries.adopted() == 28 and again.entries.columns == ()
    _answers_hold(again)


def _relayout(plan: Any) -> None:
    layer = plan.model.stack.layers[3]
    layer.scale = nn.Parameter(torch.rand(9) + 0.5, requires_grad=False)
    layer.weight = nn.Parameter(torch.rand(9), requires_grad=False)
    report = plan.run(strict=False)
    assert report.reallocated == [f"stack.layers.3.{n}" for n in ("inv", "prod", "scale_alias")]


def test_a_relayout_opens_the_columns() -> None:
    plan = _compile()
    _relayout(plan)
    assert plan.entries.columns == ()
    _answers_hold(plan)


def test_canary_a_relayout_that_keeps_its_columns_is_caught(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Planted bug: the relayout leaves the columns in place; their storage lists still hold
    layer 3's old tensors, which the startup record then reads (the relayout's pass fails on
    the stale storage, or the answers differ): red."""
    monkeypatch.setattr(EntryTable, "open_columns", lambda self: None)
    plan = _compile()
    with pytest.raises((AssertionError, PassFault)):
        _relayout(plan)
        _answers_hold(plan)


def test_canary_storages_that_skip_the_generic_entries_are_caught(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Planted bug: :meth:`EntryTable.storages` reads the columns only: red."""
    plan = _compile()
    monkeypatch.setattr(EntryTable, "storages", lambda self: iter(
        [s for c in self.columns for s in c.storages]))
    with pytest.raises(AssertionError):
        _answers_hold(plan)
