"""Entry columns the pass writes are allocated unfilled (``planner._compile``).

A column whose template the lowered pass writes whole (:func:`~derivgraph.compiler.lower.
pass_writes`, the rule the :class:`~derivgraph.compiler.lower.Lowerer` lowers each derived
tensor by) takes ``allocate_column``'s empty storages, its fills owed; every other column is
made filled as before. Once the pass is installed, ``planner._pay`` proves each owed column's
rows targets of its writes and fills, before the pass runs, a column with a row that is not.

The dump of a compile does not hold values, so these tests poison the unfilled storages
(``allocate_column`` filled with NaN / a sentinel) and assert every entry bit for bit against
an eager evaluation, with no demotion of the grouped pass. Workloads: the scaling spec (a
source-free column the pass never writes), a derived column read by another (``twice = inv *
2.0``: read after its write) and a source-free column the pass reads (``d = c * scale``:
read, never written). Canaries: the rule widened (the constant columns taken as written)
turns ``test_the_rule_is_the_lowering_s`` red; the proof gone while the rule is wrong (the
widened rule planted) turns ``test_a_column_the_pass_does_not_write_is_filled_before_it``
red; a column counted as written where only some rows are turns ``test_pay_fills_a_column_
with_a_row_not_written`` red.
"""

from __future__ import annotations

import logging
from types import SimpleNamespace
from typing import Any

import pytest
import torch

from derivgraph import DerivedTensor, Spec, Target, adoption
from derivgraph import planner as planner_module
from derivgraph.compare import bits_equal
from derivgraph.compiler.lower import pass_writes
from derivgraph.compiler.stamp import stamping
from derivgraph.runtime.entry_columns import EntryColumn
from derivgraph.tools.bench_scaling import scaling_model, scaling_spec
from tests.compiler.scaling_variants import spec_with_generic_rows

LAYERS = 24
POISON_INT = -(1 << 40) + 3


def _read_not_written_spec() -> Spec:
    """A source-free column (``c``, never written by the pass) that the pass reads (``d``)."""
    return Spec(name="readers", target=Target(module_class=["ScalingLayer"]),
                params={"E": "scale.shape[0]"}, derived=[
                    DerivedTensor(name="c", kind="attribute", formula="full([E], 7.0)"),
                    DerivedTensor(name="d", kind="attribute", formula="c * scale")])


SPECS = {"scaling": scaling_spec, "read_after_written": spec_with_generic_rows,
         "read_not_written": _read_not_written_spec}


def _poisoned(tensors: list[torch.Tensor]) -> list[torch.Tensor]:
    with torch.no_grad():
        for t in tensors:
            t.fill_(float("nan") if t.dtype.is_floating_point else POISON_INT)
    return tensors


def _poison(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """``allocate_column`` (the unfilled storages) poisoned; returns the rows made, per call."""
    made: list[int] = []

    def allocate(values: list[torch.Tensor], *args: Any) -> list[torch.Tensor]:
        made.append(len(values))
        return _poisoned(adoption.allocate_column(values, *args))

    monkeypatch.setattr(planner_module, "allocate_column", allocate)
    return made


def _compile(spec: Any, stamped: bool = True) -> Any:
    torch.manual_seed(0)
    with stamping(stamped):
        return planner_module.compile_plan(scaling_model(LAYERS), [spec()])


def _assert_every_entry_is_eager(plan: Any) -> None:
    values = planner_module._evaluate_all(plan.graph)
    wrong = [n for n, e in plan.entries.by_id.items()
             if isinstance(e.storage, torch.Tensor) and not bits_equal(e.storage, values[n])]
    assert wrong == []


@pytest.mark.parametrize("stamped", [True, False], ids=["stamped", "plain"])
@pytest.mark.parametrize("name", list(SPECS))
def test_the_rule_is_the_lowering_s(name: str, stamped: bool) -> None:
    """The derived tensors :func:`pass_writes` names are the installed pass's write targets."""
    plan = _compile(SPECS[name], stamped)
    graph = plan.graph
    deps = graph.source_deps()
    named = {n for n, node in graph.derived.items() if pass_writes(node, deps)}
    assert named == set(plan.programs.written())
    assert len(named) < len(graph.derived)  # aliases and source-free tensors are not written


@pytest.mark.parametrize("name", list(SPECS))
def test_the_written_columns_are_unfilled_and_every_entry_exact(
        monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture, name: str) -> None:
    made = _poison(monkeypatch)
    with caplog.at_level(logging.WARNING, logger="derivgraph.planner"):
        plan = _compile(SPECS[name])
    _assert_every_entry_is_eager(plan)
    assert "differs from eager" not in caplog.text  # the pass read no poisoned row
    written = set(plan.programs.written())
    columns = [c for c in plan.entries.columns if type(c) is EntryColumn]
    unfilled = [c for c in columns if set(c.ids) <= written]
    assert unfilled and len(unfilled) < len(columns)  # a column of each kind
    assert made == [len(c) for c in unfilled]  # only those were made unfilled


@pytest.mark.parametrize("name", ["scaling", "read_not_written"])
def test_a_column_the_pass_does_not_write_is_filled_before_it(
        monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture, name: str) -> None:
    """The rule planted wide (every column taken as written): the source-free column is made
    unfilled, and the proof fills it before the pass reads it (``d``) or the plan keeps it."""
    made = _poison(monkeypatch)
    monkeypatch.setattr(planner_module, "pass_writes", lambda node, deps: True)
    paid: list[int] = []
    copy = planner_module.foreach_copy

    def spy(ours: list[torch.Tensor], theirs: list[torch.Tensor], *args: Any) -> None:
        paid.append(len(ours))
        copy(ours, theirs, *args)

    monkeypatch.setattr(planner_module, "foreach_copy", spy)
    with caplog.at_level(logging.WARNING, logger="derivgraph.planner"):
        plan = _compile(SPECS[name])
    _assert_every_entry_is_eager(plan)
    assert "differs from eager" not in caplog.text
    columns = [c for c in plan.entries.columns if type(c) is EntryColumn]
    assert made == [len(c) for c in columns]
    assert paid[-1] == LAYERS - 1  # the source-free column's rows (row 0: the template)


def _owed(ids: list[str]) -> planner_module.OwedFill:
    values = [torch.full((2,), float(i)) for i in range(len(ids))]
    return planner_module.OwedFill(ids, list(zip(_poisoned([torch.empty(2) for _ in ids]),
                                                 values)))


@pytest.mark.parametrize("missing", [None, "a1", "b0", "b2"])
def test_pay_fills_a_column_with_a_row_not_written(missing: str | None) -> None:
    """A column is left unfilled only where every row is a write target; one missing row
    (first, middle or last) fills that whole column and no other."""
    owed = [_owed(["a0", "a1", "a2"]), _owed(["b0", "b1", "b2"])]
    targets = ["x", "a0", "a1", "a2", "b0", "b1", "b2"]
    if missing is not None:
        targets.remove(missing)
    plan = SimpleNamespace(programs=SimpleNamespace(written=lambda: list(targets)))
    paid = planner_module._pay(plan, owed)
    assert paid.written == set(targets)
    # the columns written whole, their very ids lists (the bit check takes them unswept)
    assert [id(ids) for ids in paid.whole] == \
        [id(c.ids) for c in owed if missing is None or missing not in c.ids]
    for column in owed:
        filled = missing is not None and missing in column.ids
        for storage, value in column.fills:
            assert bits_equal(storage, value) is filled
            assert bool(storage.isnan().all()) is not filled
