"""The plan's constant entries answered per template column.

``planner._constant_entries`` skips every entry column whose template depends on a source and
takes every row of one whose template depends on none (a closed row depends on a source
exactly where its template does); the generic entries are swept one by one. The answer must
be the per-entry sweep's (``planner._constants_of`` over every entry), the same list in the
same order, on the compile's own plans, stamped and plain. Canaries:
``benchmarks/results/consts65/NOTES.md``.
"""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest
import torch
from torch import nn

from derivgraph import DerivedTensor, Spec, Target
from derivgraph.compiler.stamp import stamping
from derivgraph.planner import _constant_entries, _constants_of, compile_plan
from derivgraph.runtime.entry_columns import EntryColumn
from derivgraph.spec.kinds import TensorKind
from derivgraph.tools.bench_scaling import scaling_model, scaling_spec


class _Other(nn.Module):
    """A layer of another spec: one source-free derived tensor, no column of its own."""

    def __init__(self) -> None:
        super().__init__()
        self.gain = nn.Parameter(torch.rand(4) + 0.5, requires_grad=False)


def _other_spec() -> Spec:
    return Spec(name="other", target=Target(module_class=["_Other"]),
                derived=[DerivedTensor(name="ones", kind="attribute",
                                       formula="full([4], 3, dtype=int64)"),
                         DerivedTensor(name="twice", kind="attribute", formula="gain * 2")])


def _mixed(layers: int) -> nn.Module:
    """Scaling layers with one other layer in their middle: its generic constant entry falls
    between two rows of the scaling table's source-free column in the entries' order."""
    model = scaling_model(layers)
    model.layers.insert(layers // 2, _Other())
    return model


def _compile(model: nn.Module, specs: list[Spec], stamped: bool) -> Any:
    with stamping(stamped):
        return compile_plan(model, specs)


def _sweep(plan: Any) -> list[str]:
    return _constants_of(plan.entries.items(), plan.graph.source_deps())


@pytest.mark.parametrize("stamped", [True, False])
@pytest.mark.parametrize("make", ["scaling", "mixed"])
def test_constant_entries_are_the_per_entry_sweep(stamped: bool, make: str) -> None:
    if make == "scaling":
        plan = _compile(scaling_model(9), [scaling_spec()], stamped)
    else:
        plan = _compile(_mixed(9), [scaling_spec(), _other_spec()], stamped)
    assert plan.constant_entries == _sweep(plan)
    assert len(plan.constant_entries) >= 9  # every layer's strides
    if stamped:  # the per-column path ran: a column skipped, a source-free one taken
        deps = plan.graph.source_deps()
        columns = plan.entries.columns
        assert all(isinstance(c, EntryColumn) for c in columns)
        assert any(deps[c.template] for c in columns)
        assert any(not deps[c.template] for c in columns)
    else:
        assert not plan.entries.columns


def test_a_generic_constant_between_column_rows_keeps_its_place() -> None:
    plan = _compile(_mixed(9), [scaling_spec(), _other_spec()], True)
    ids = list(plan.entries)
    other = next(n for n in plan.constant_entries if n.endswith(".ones"))
    assert other in plan.entries.generic
    at = plan.constant_entries.index(other)
    assert 0 < at < len(plan.constant_entries) - 1  # between the strides rows
    assert [ids.index(n) for n in plan.constant_entries] == \
        sorted(ids.index(n) for n in plan.constant_entries)


def test_a_column_row_depends_on_a_source_exactly_where_its_template_does() -> None:
    plan = _compile(scaling_model(7), [scaling_spec()], True)
    deps = plan.graph.source_deps()
    for column in plan.entries.columns:
        assert isinstance(column, EntryColumn)
        assert all(bool(deps[n]) == bool(deps[column.template]) for n in column.ids)


def test_a_plan_of_open_columns_sweeps_every_entry() -> None:
    plan = _compile(scaling_model(5), [scaling_spec()], True)
    plan.entries.open_columns()
    assert _constant_entries(plan, plan.graph.source_deps()) == _sweep(plan)


def test_a_source_free_column_row_still_meets_the_rule(monkeypatch: pytest.MonkeyPatch) -> None:
    """A row of a source-free column is taken only where it is held and computed: a row
    whose node has no input (an opaque engine tensor) is left out, as the sweep leaves it
    out; a column whose rows are of a kind not held (entry72: the kind is the column's,
    proven where it is kept) gives none."""
    plan = _compile(scaling_model(6), [scaling_spec()], True)
    deps = plan.graph.source_deps()
    column = next(c for c in plan.entries.columns
                  if isinstance(c, EntryColumn) and not deps[c.template])
    for at in (1, 3):
        column.entries[at].node.input = None
        found = _constant_entries(plan, deps)
        assert column.ids[at] not in found and column.ids[at - 1] in found
        assert found == _sweep(plan)
    monkeypatch.setattr(type(column), "kind", TensorKind.ALIAS)
    assert not set(column.ids) & set(_constant_entries(plan, deps))


def test_the_rule_proven_free_reads_no_deps() -> None:
    held = SimpleNamespace(node=SimpleNamespace(kind=TensorKind.ATTRIBUTE, input="%1:full"))
    assert _constants_of([("a", held)], {}, True) == ["a"]
    assert _constants_of([("a", held)], {"a": frozenset({"s"})}) == []
