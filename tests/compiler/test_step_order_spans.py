"""``lower._step_order`` reads one layer's step nodes in a chunk of the order where the
order's spans put its table's rows (:func:`derivgraph.compiler.lower._members_spanned`):
the columns at their offsets, each proved by one comparison, instead of a filter of every
node. The answer must be the reference filter's (``[n for n in order if n in members]``) on
the compiled scaling plan and on small orders with planted chunks (rows swapped, a row's
nodes out of step, a chunk too short or shifted, a member inside the chunk at another
offset, a template step after the chunk); where a chunk does not hold the rows so, the
filter decides.

Canary: the column comparison planted away (offsets taken from the first block alone) takes
a chunk whose rows are swapped and gives an order the filter does not give."""

from __future__ import annotations

from itertools import chain

import pytest

from derivgraph.compiler import lower
from derivgraph.compiler.instances import InstanceTable
from derivgraph.compiler.lower import Action, LayerSteps, Step, _members_spanned, _step_order

from .test_layer_proof_reads import _reference_order
from .test_schedule_layers import LAYERS, _plan


def _filter(order: list[str], members: set[str]) -> list[str]:
    return [n for n in order if n in members]


def _members(layer: LayerSteps) -> set[str]:
    return set(chain.from_iterable([s.node, *layer.column_of(s.node)] for s in layer.steps))


def test_the_plans_chunk_gives_the_filter() -> None:
    plan = _plan()
    lowered = plan.programs.lowered
    order, chunks = plan.graph.ordered(), plan.graph.ir.spanned()
    assert chunks  # the stamped rows were emitted as one span
    layer = lowered.layers[0]
    members = _members(layer)
    got = _members_spanned(order, members, layer.table, chunks)
    assert got is not None and got == _filter(order, members)
    assert len(got) == 2 * LAYERS
    chosen = {s.node: s for s in lowered}
    assert _step_order(order, chosen, lowered.layers, chunks) == \
        _step_order(order, chosen, lowered.layers) == [s.node for s in plan.steps]


@pytest.mark.parametrize("a, b", [(3, 4), (1, 5)])
def test_rows_swapped_in_the_chunk_are_refused_as_the_filter_refuses(a: int, b: int) -> None:
    plan = _plan()
    lowered = plan.programs.lowered
    order, chunks = list(plan.graph.ordered()), plan.graph.ir.spanned()
    for name in ("inv", "prod"):
        i, j = order.index(f"layers.{a}.{name}"), order.index(f"layers.{b}.{name}")
        order[i], order[j] = order[j], order[i]
    layer = lowered.layers[0]
    members = _members(layer)
    assert _members_spanned(order, members, layer.table, chunks) in (None,
                                                                     _filter(order, members))
    chosen = {s.node: s for s in lowered}
    assert _step_order(order, chosen, lowered.layers, chunks) is None
    assert _step_order(order, chosen, lowered.layers) is None


_T = ("t.a", "t.b", "t.c")
_ROWS = [("x.a", "x.b", "x.c"), ("y.a", "y.b", "y.c"), ("z.a", "z.b", "z.c")]
_HEAD = ["k", "t.a", "t.b", "t.c", "o"]
_CHUNK = ["x.a", "x.b", "x.c", "y.a", "y.b", "y.c", "z.a", "z.b", "z.c"]


def _layer(positions: list[int], rows: list[tuple[str, ...]] = _ROWS) -> LayerSteps:
    recipes = tuple((k, Step(_T[k], Action.OUT, "torch.neg", (), {}, None, _T[k]), -1, False,
                     -1) for k in positions)
    return LayerSteps(InstanceTable(_T, rows), recipes, None)


def _swap(items: list[str], a: str, b: str) -> list[str]:
    out = list(items)
    i, j = out.index(a), out.index(b)
    out[i], out[j] = out[j], out[i]
    return out


_CASES = {
    "whole": (_HEAD + _CHUNK + ["w"], (5, 14)),
    "shifted": (_HEAD + _CHUNK + ["w"], (4, 13)),
    "short": (_HEAD + _CHUNK + ["w"], (5, 13)),
    "rows-swapped": (_HEAD + _swap(_swap(_CHUNK, "x.a", "y.a"), "x.c", "y.c") + ["w"], (5, 14)),
    "a-row-out-of-step": (_HEAD + _swap(_CHUNK, "y.a", "y.c") + ["w"], (5, 14)),
    "a-step-inside": (["k", "t.b", "t.c", "o"] + _CHUNK[:4] + ["t.a"] + _CHUNK[4:], (4, 14)),
    "a-template-step-after": (["k", "t.b", "o"] + _CHUNK + ["t.a", "t.c"], (3, 12)),
    "no-chunk": (_HEAD + _CHUNK + ["w"], None),
}


@pytest.mark.parametrize("positions", [[0], [0, 2], [2, 0], [1], [0, 1, 2]],
                         ids=["a", "a-c", "c-a", "b", "all"])
@pytest.mark.parametrize("case", list(_CASES))
@pytest.mark.parametrize("outside", [False, True], ids=["", "o-chosen"])
def test_a_chunk_gives_the_filter_or_nothing(case: str, positions: list[int],
                                             outside: bool) -> None:
    order, chunk = _CASES[case]
    chunks = [] if chunk is None else [chunk]
    layer = _layer(positions)
    members = _members(layer)
    got = _members_spanned(order, members, layer.table, chunks)
    assert got is None or got == _filter(order, members)
    if case == "whole":
        assert got is not None  # the proof applies where the rows are so
    if case in ("rows-swapped", "a-row-out-of-step", "short", "shifted"):
        assert got is None
    names = [_T[k] for k in positions] + (["o"] if outside else [])
    steps = {n: Step(n, Action.OUT, "torch.neg", (), {}, None, n) for n in names}
    assert _step_order(order, steps, [layer], chunks) == _reference_order(order, steps, [layer])


def test_canary_offsets_taken_from_the_first_block_alone_are_caught(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """The planted proof reads every row at the first row's offsets unchecked: a chunk whose
    second row is out of step then gives an order the filter does not."""
    order, chunk = _CASES["a-row-out-of-step"]
    layer = _layer([0])
    members = _members(layer)

    def planted(order: list[str], members: set[str], table: InstanceTable,
                chunks: list[tuple[int, int]]) -> list[str] | None:
        start, stop = chunks[0]
        width = len(table.template)
        block = order[start:start + width]
        steps = sorted(block.index(c[0]) for c in table.columns() if c[0] in members)
        inside = chain.from_iterable(zip(*[order[start + at:stop:width] for at in steps]))
        return [*_filter(order[:start], members), *inside, *_filter(order[stop:], members)]

    assert _members_spanned(order, members, layer.table, [chunk]) is None
    assert planted(order, members, layer.table, [chunk]) != _filter(order, members)
    monkeypatch.setattr(lower, "_members_spanned", planted)
    steps = {n: Step(n, Action.OUT, "torch.neg", (), {}, None, n) for n in ("t.a",)}
    assert _step_order(order, steps, [layer], [chunk]) != _reference_order(order, steps,
                                                                            [layer])


def test_a_member_at_another_columns_offset_leaves_it_to_the_filter() -> None:
    """A table whose row holds the template's step node at another column (no stamped table
    does: an order lists each node once) is left to the filter: the members found in the
    chunk's step columns are not all of them (the count check; planted away, red)."""
    rows = [("x.a", "x.b", "x.c"), ("y.a", "t.a", "y.c"), ("z.a", "z.b", "z.c")]
    layer = _layer([0], rows)
    order = ["k", "t.b", "t.c", "o", "x.a", "x.b", "x.c", "y.a", "t.a", "y.c", "z.a", "z.b",
             "z.c"]
    members = _members(layer)
    assert _members_spanned(order, members, layer.table, [(4, 13)]) is None
    steps = {"t.a": Step("t.a", Action.OUT, "torch.neg", (), {}, None, "t.a")}
    assert _step_order(order, steps, [layer], [(4, 13)]) == _reference_order(order, steps,
                                                                              [layer])
