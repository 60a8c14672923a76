"""What the lowering reads once for a stamped table and hands on, and the answers it gives.

* The layer proof (``lower_layers._columns_hold``) reads a node every row shares once: its
  storage address is repeated for every row, and each row's own storage is still compared
  with it, row by row.
* The bound values the proof read of a proven table's columns are kept with the address memo
  they were read under (``lower_layers.kept_column``): the schedule's group keys
  (``schedule_layers.same_key_facts``) and the code generation's operand lists take them,
  so a compile reads each row column once; once the context drops its memo (a tensor bound or
  staged again) they are read again.
* ``lower._step_order`` with one layer takes the layer's node set as the members set only
  where it holds every chosen step; its answer equals the reference filter.
* ``schedule_layers._fence``'s fenced addresses are every own and every shared address.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from itertools import chain
from typing import Any

import pytest
import torch

from derivgraph import compile_plan
from derivgraph.compiler import layers, lower, lower_layers, schedule_layers
from derivgraph.compiler.instances import InstanceTable
from derivgraph.compiler.lower import Action, LayerSteps, Step
from derivgraph.compiler.stamp import stamping
from derivgraph.tools.bench_scaling import scaling_model, scaling_spec

LAYERS = 12


class _Bound:
    """A stand-in lowering context: the tensors bound at each node id, no meta values; it
    counts the refs each ``bound_values`` call asked."""

    def __init__(self, table: dict[str, torch.Tensor]):
        self.table, self.meta_env = table, {}
        self.asked: list[list[str]] = []

    def bound_values(self, refs: Iterable[str], missing: Any = None) -> list[Any]:
        refs = list(refs)
        self.asked.append(refs)
        return [self.table.get(r, missing) for r in refs]


def _shared_case(rows: list[str]) -> tuple[_Bound, InstanceTable, tuple[str, ...], Any, Any]:
    """A one-node template ``t.a`` reading the shared node ``c``; row ``y`` holds ``c``'s very
    tensor at its own position (its storage is not apart from the shared node's), ``x`` and
    ``z`` storage of their own."""
    c = torch.zeros(4)
    table = {"t.a": torch.zeros(4), "x.a": torch.zeros(4), "y.a": c, "z.a": torch.zeros(4),
             "c": c}
    ctx = _Bound(table)
    template, shared = ("t.a",), ("c",)
    facts = lower_layers.layer_facts(ctx, template + shared)
    return ctx, InstanceTable(template, [(f"{r}.a",) for r in rows]), shared, [None], facts


@pytest.mark.parametrize("rows, holds", [
    (["x", "z"], True),
    (["x", "y"], False),        # the second row shares the shared node's storage
    (["x", "z", "y"], False),   # the last row does
    (["y"], False),
])
def test_a_shared_node_is_read_once_and_compared_with_every_row(
        rows: list[str], holds: bool, monkeypatch: pytest.MonkeyPatch) -> None:
    """Canary (planted once by hand): the shared node's address not repeated for every row
    (``ptrs[k] = mine``): only the first row is compared with it, ``[x, y]`` holds."""
    ctx, table, shared, metas, facts = _shared_case(rows)
    assert facts[1][4] == 1  # the shared node's storage is first seen at its own position
    addressed: list[list[str]] = []
    real = lower_layers.column_addresses

    def spy(ctx: Any, refs: Any, *args: Any, **kwargs: Any) -> Any:
        addressed.append(list(refs))
        return real(ctx, refs, *args, **kwargs)

    monkeypatch.setattr(lower_layers, "column_addresses", spy)
    assert lower_layers._columns_hold(ctx, table, shared, metas, facts) is holds
    assert ["c"] in addressed  # the shared node's: once, not once per row
    assert all(refs != ["c"] * len(rows) for refs in addressed if len(rows) > 1)
    # the reference: each row's own facts against the template's
    assert all(lower_layers.layer_facts(ctx, row + shared) == facts for row in table.rows) \
        is holds


def _compile_reads(monkeypatch: pytest.MonkeyPatch) -> tuple[Any, list[list[str]]]:
    """A stamped scaling compile and the refs of every ``bound_values`` call made while it
    lowered and generated code."""
    from derivgraph.runtime.storage import BoundTensors

    asked: list[list[str]] = []
    real = BoundTensors.bound_values

    def spy(self: Any, refs: Iterable[str], missing: Any = None) -> list[Any]:
        refs = list(refs)
        asked.append(refs)
        return real(self, refs, missing)

    monkeypatch.setattr(BoundTensors, "bound_values", spy)
    torch.manual_seed(0)
    with stamping(True):
        plan = compile_plan(scaling_model(LAYERS), [scaling_spec()])
    monkeypatch.setattr(BoundTensors, "bound_values", real)
    return plan, asked


def test_a_compile_reads_each_row_column_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """The proof's reads of the rows' columns are the only ones: the group keys and the
    operand and target lists take them. The installed pass equals the one generated with
    every kept column refused (read again), list by list, tensor by tensor."""
    plan, asked = _compile_reads(monkeypatch)
    (table,) = layers.closed_layers(plan.graph)
    columns = [table.column(k) for k in range(len(table.template))]
    for column in columns:
        assert sum(refs == column for refs in asked) == 1, column[0]
    kept = plan.programs.program
    monkeypatch.setattr(lower_layers, "kept_column", lambda ctx, kept, k: None)
    monkeypatch.setattr(lower, "kept_column", lambda ctx, kept, k: None)
    monkeypatch.setattr(schedule_layers, "kept_column", lambda ctx, kept, k: None)
    plain, asked_again = _compile_reads(monkeypatch)
    assert sum(refs == columns[0] for refs in asked_again) > 1  # read again without them
    program = plain.programs.program
    assert kept.source == program.source
    mine, theirs = plan.programs.bindings.globals, plain.programs.bindings.globals
    assert mine.keys() == theirs.keys()
    lists = [name for name, value in mine.items() if isinstance(value, list)]
    assert lists
    for name in lists:  # each list holds the tensors of the same nodes, in the same order
        assert _nodes_of(plan, mine[name]) == _nodes_of(plain, theirs[name])


def _nodes_of(plan: Any, tensors: list[Any]) -> list[str | None]:
    """The node whose bound tensor each of ``tensors`` is (a source's or an entry's)."""
    at = {id(t): n for n, t in plan.tensors.sources.items()}
    at.update((id(e.storage), n) for n, e in plan.entries.items())
    return [at.get(id(t)) for t in tensors]


def test_the_kept_values_are_the_bound_values_while_the_memo_holds() -> None:
    """During a compile (its layout book set) each kept column is, value by value, what
    ``bound_values`` reads of the table's column; once the context drops its memo (the book
    set again, as a bind or a staging does) nothing kept is handed out.

    Canary (planted once by hand): ``kept_column`` without the memo check hands the values
    out after the memo was dropped: the last assertion is red."""
    with _proven_layer() as (_, ctx, layer):
        assert layer.values is not None and layer.values in ctx.address_memo
        table = layer.table
        seen = 0
        for k, ref in enumerate(table.template):
            got = layer.kept_column_of(ctx, ref)
            if got is None:
                continue
            seen += 1
            want = ctx.bound_values(table.column(k))
            assert len(got) == len(want) and all(map(lambda a, b: a is b, got, want))
        assert seen >= 4  # the entry columns and the sources' at least
        assert layer.kept_column_of(ctx, "no such node") is None
        ctx.layouts = ctx.layouts  # the memo dropped
        assert all(layer.kept_column_of(ctx, ref) is None for ref in table.template)


@contextmanager
def _proven_layer() -> Iterator[tuple[Any, Any, LayerSteps]]:
    """A 12-layer scaling plan's context with a layout book set (as during a compile) and
    its one proven layer: (plan, context, layer); the book unset after."""
    torch.manual_seed(0)
    with stamping(True):
        plan = compile_plan(scaling_model(LAYERS), [scaling_spec()])
    ctx = plan.tensors
    ctx.layouts = _book()
    try:
        (layer,) = lower.lower_steps(ctx).layers
        yield plan, ctx, layer
    finally:
        ctx.layouts = None


def _book() -> Any:
    """An empty layout book: the context keeps its memo while one is set."""
    from derivgraph.column_layout import ColumnLayouts

    return ColumnLayouts()


def test_a_changed_row_is_read_again_after_the_memo_is_dropped() -> None:
    """A row's written storage replaced by one that is not contiguous after the proof, the
    memo dropped (as any new binding does): the group key's facts are read again and refuse
    the column. Canary: the same ``kept_column`` without the memo check: the kept (old)
    values say the facts hold."""
    with _proven_layer() as (plan, ctx, layer):
        step = next(s for s in layer.steps if s.action is Action.OUT)
        n = len(layer.table.rows)
        assert schedule_layers.same_key_facts(ctx, layer, step, n)
        entry = plan.entries.by_id[layer.column_of(step.target)[3]]
        entry.storage = torch.zeros(2 * entry.storage.numel())[::2]
        ctx.layouts = ctx.layouts  # the memo dropped
        assert not schedule_layers.same_key_facts(ctx, layer, step, n)


def _layer(template: tuple[str, ...], rows: list[tuple[str, ...]],
           positions: list[int]) -> LayerSteps:
    """A layer whose steps write the template's nodes at ``positions``."""
    recipes = tuple((k, Step(template[k], Action.OUT, "torch.neg", (), {}, None,
                             template[k]), -1, False, -1) for k in positions)
    return LayerSteps(InstanceTable(template, rows), recipes, None)


def _reference_order(order: list[str], chosen: dict[str, Step],
                     layer_list: list[LayerSteps]) -> list[str] | None:
    """``_step_order`` as first written: one members set, each layer's set made again."""
    cols = [{s.node: [s.node, *layer.column_of(s.node)] for s in layer.steps}
            for layer in layer_list]
    members = set(chosen)
    for col in cols:
        members.update(chain.from_iterable(col.values()))
    seen = list(filter(members.__contains__, order))
    for col in cols:
        mine = set(chain.from_iterable(col.values()))
        layer_seen = seen if len(mine) == len(seen) else list(filter(mine.__contains__, seen))
        first = layer_seen[:len(col)]
        if set(first) != col.keys() or \
                layer_seen != list(chain.from_iterable(zip(*map(col.__getitem__, first)))):
            return None
    return seen


_T = ("t.a", "t.b")
_ROWS = [("x.a", "x.b"), ("y.a", "y.b")]
_ORDER = ["t.a", "t.b", "o", "x.a", "x.b", "y.a", "y.b"]


@pytest.mark.parametrize("chosen, order, layer_list", [
    (["t.a"], _ORDER, [_layer(_T, _ROWS, [0])]),                  # the template's only
    (["t.a", "o"], _ORDER, [_layer(_T, _ROWS, [0])]),             # a step outside the layer
    (["t.a", "t.b", "o"], _ORDER, [_layer(_T, _ROWS, [0, 1])]),
    ([], _ORDER, [_layer(_T, _ROWS, [0, 1])]),
    (["t.a", "o"], ["t.a", "o", "y.a", "x.a"], [_layer(_T, _ROWS, [0])]),  # rows swapped
    (["t.a", "u.a", "o"], ["t.a", "u.a", "o", "x.a", "v.a", "y.a"],
     [_layer(_T, _ROWS, [0]), _layer(("u.a",), [("v.a",)], [0])]),  # two layers
], ids=["template", "outside", "two-steps", "none-chosen", "swapped", "two-layers"])
def test_the_step_order_is_the_reference_filters(chosen: list[str], order: list[str],
                                                  layer_list: list[LayerSteps]) -> None:
    """Canary (planted once by hand): the one layer's set taken as the members set even
    where a chosen step lies outside it: ``outside`` loses ``o`` and is red."""
    steps = {n: Step(n, Action.OUT, "torch.neg", (), {}, None, n) for n in chosen}
    want = _reference_order(order, steps, layer_list)
    assert lower._step_order(order, steps, layer_list) == want
    if "o" in chosen and want is not None:
        assert "o" in want


def test_the_fence_holds_every_own_and_shared_address() -> None:
    """``_fence``'s fenced set is the union of every proof's own and shared addresses."""
    proofs = [(_layer(_T, _ROWS, [0]), ({}, [1, 2, 3], ["c"], {10}, [0])),
              (_layer(("u.a",), [("v.a",)], [0]), ({}, [4, 5], ["d"], {11, 10}, [1]))]
    fence = schedule_layers._fence(proofs)
    assert fence is not None
    assert fence.fenced == {1, 2, 3, 4, 5, 10, 11}
    assert fence.shared == {"c", "d"}
    assert schedule_layers._fence([(proofs[0][0], ({}, [1, 2, 2], [], set(), [0]))]) is None
    assert schedule_layers._fence([(proofs[0][0], ({}, [1, 2], ["c"], {2}, [0]))]) is None
