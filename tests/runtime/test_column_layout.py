"""Layout facts proved once per entry column (:mod:`derivgraph.column_layout`).

The record (:func:`column_layout`) and the book (:class:`ColumnLayouts`) by hand; the compile's
book on the scaling workload (stamped, 12 layers): every allocated column of the template
(``inv``, ``prod``, ``strides``) has one record for its storages, asserted against each storage
read one by one, and the plan keeps no book after its compile. Each reader that takes the
record answers as the per-tensor sweeps do (the same answer with the book and without it), a
tensor the book does not hold (an entry given another storage) is read as before, and a record
that lies is what the reader goes by (the canaries: a planted wrong dtype or shape turns the
reader's answer).
"""

from __future__ import annotations

import contextlib
import dataclasses
from collections.abc import Iterator
from typing import Any

import pytest
import torch

from derivgraph import compile_plan
from derivgraph import planner as planner_module
from derivgraph.column_layout import (
    ColumnFacts,
    ColumnLayout,
    ColumnLayouts,
    column_layout,
    one_layout,
)
from derivgraph.compiler import lower_layers
from derivgraph.compiler.stamp import stamping
from derivgraph.runtime import entry_columns as columns_module
from derivgraph.runtime.entry_columns import AliasColumn, EntryColumn
from derivgraph.tools.bench_scaling import scaling_model, scaling_spec
from tests.compiler.test_stamp_reload import _model


def test_column_layout_of_one_layout() -> None:
    values = [torch.zeros(2, 3), torch.ones(2, 3), torch.empty(3, 2).t()]
    layout = column_layout(values)
    assert layout is not None
    assert (layout.type, layout.dtype, layout.shape, layout.device, layout.contiguous) == \
        (torch.Tensor, torch.float32, torch.Size([2, 3]), torch.device("cpu"), None)
    assert (layout.numel, layout.is_meta) == (6, False)
    assert column_layout([torch.zeros(2, device="meta")]).is_meta  # type: ignore[union-attr]


@pytest.mark.parametrize("other", [
    torch.zeros(3, 2),  # another shape
    torch.zeros(2, 3, dtype=torch.float64),  # another dtype
    torch.zeros(2, 3, device="meta"),  # another device
    torch.nn.Parameter(torch.zeros(2, 3)),  # another type
    3.0,  # not a tensor
])
def test_column_layout_of_mixed_values_is_none(other: Any) -> None:
    assert column_layout([torch.zeros(2, 3), other]) is None
    assert column_layout([]) is None


def test_book_finds_a_column_whole_or_in_part() -> None:
    column = [torch.zeros(4) for _ in range(5)]
    layout = ColumnLayout(torch.Tensor, torch.float32, torch.Size([4]), torch.device("cpu"), True)
    book = ColumnLayouts()
    book.add(column, layout)
    assert len(book) == 5
    assert book.common(column) is layout  # the column in its order
    assert book.common(column[3:0:-1]) is layout  # a part of it, in another order
    stranger = torch.zeros(4)  # same layout, not made by the column
    assert book.common([*column, stranger]) is None
    assert book.common([stranger, *column]) is None
    assert book.common([]) is None
    assert book.of([column[2], stranger]) == [layout, None]
    other = ColumnLayout(torch.Tensor, torch.float32, torch.Size([4]), torch.device("cpu"), True)
    more = [torch.zeros(4)]
    book.add(more, other)
    assert book.common([column[0], more[0]]) is layout  # two records of the same facts
    apart = [torch.zeros(4, dtype=torch.float64)]
    book.add(apart, ColumnLayout(torch.Tensor, torch.float64, torch.Size([4]),
                                 torch.device("cpu"), True))
    assert book.common([column[0], apart[0]]) is None  # two records that differ: none
    assert book.common([more[0], column[1], apart[0]]) is None


_FACTS = ("type", "tensors", "dtype", "shape", "device", "contiguous", "is_meta", "numel")


def _facts(got: ColumnFacts) -> tuple[Any, ...]:
    return tuple(getattr(got, name) for name in _FACTS)


def test_column_facts_from_a_record_are_the_values_own() -> None:
    column = [torch.full((2, 3), float(i)) for i in range(4)]
    book = ColumnLayouts()
    book.add(column, ColumnLayout(torch.Tensor, torch.float32, torch.Size([2, 3]),
                                  torch.device("cpu"), True))
    recorded, swept = ColumnFacts(column, book), ColumnFacts(column)
    assert recorded.record is not None and swept.record is None
    assert _facts(recorded) == _facts(swept) == (
        torch.Tensor, True, torch.float32, torch.Size([2, 3]), torch.device("cpu"), True,
        False, 24)


def test_column_facts_the_values_do_not_share_are_none() -> None:
    mixed = ColumnFacts([torch.zeros(2, 3), torch.zeros(2, 3, dtype=torch.float64).t()])
    assert (mixed.type, mixed.tensors, mixed.dtype, mixed.shape, mixed.contiguous) == \
        (torch.Tensor, True, None, None, None)
    assert mixed.numel == 12
    strided = ColumnFacts([torch.zeros(3, 2).t(), torch.zeros(4, 2).t()])
    assert (strided.contiguous, strided.shape) == (False, None)
    kinds = ColumnFacts([torch.zeros(2), torch.nn.Parameter(torch.zeros(2))])
    assert (kinds.type, kinds.tensors, kinds.shape) == (None, True, torch.Size([2]))
    devices = ColumnFacts([torch.zeros(2), torch.zeros(2, device="meta")])
    assert (devices.device, devices.is_meta) == (None, None)
    assert ColumnFacts([torch.zeros(2, device="meta")] * 2).is_meta is True
    plain = ColumnFacts([1, 2])
    assert (plain.type, plain.tensors) == (int, False)
    assert ColumnFacts([1, 2.0]).type is None


def test_column_facts_take_only_a_record_that_proves_contiguity() -> None:
    """A record made by :func:`column_layout` (contiguity not read) is not used: the values
    are read. The record here lies about the dtype, so the canary shows which one answered."""
    column = [torch.zeros(2) for _ in range(3)]
    book = ColumnLayouts()
    book.add(column, ColumnLayout(torch.Tensor, torch.float64, torch.Size([2]),
                                  torch.device("cpu"), None))
    assert ColumnFacts(column, book).record is None
    assert ColumnFacts(column, book).dtype == torch.float32
    proved = [torch.zeros(2) for _ in range(3)]
    book.add(proved, ColumnLayout(torch.Tensor, torch.float64, torch.Size([2]),
                                  torch.device("cpu"), True))
    assert ColumnFacts(proved, book).dtype == torch.float64  # the (lying) record answers


def test_one_layout_is_the_layout_every_record_gives() -> None:
    def record(dtype: torch.dtype = torch.float32) -> ColumnLayout:
        return ColumnLayout(torch.Tensor, dtype, torch.Size([4]), torch.device("cpu"), True)

    a, b, c = record(), record(), record(torch.float64)
    assert one_layout([a, a, a]) is a
    assert one_layout([a, b]) is a  # two records, one set of facts
    assert one_layout([b, a]) is b
    assert one_layout([a, c]) is None
    assert one_layout([a, None]) is None
    assert one_layout([None, a]) is None
    assert one_layout([]) is None


def _compile_keeping(monkeypatch: pytest.MonkeyPatch, layers: int | None = None,
                     ) -> tuple[Any, ColumnLayouts, list[EntryColumn]]:
    """Compile the scaling model (stamping on; ``layers``: that many, else the 12 of
    ``test_stamp_reload``); the plan, the compile's book and columns."""
    books: list[ColumnLayouts] = []
    made: list[EntryColumn] = []

    class Kept(ColumnLayouts):
        __slots__ = ()

        def __init__(self) -> None:
            super().__init__()
            books.append(self)

    build = columns_module.entry_columns

    def recording(*args: Any) -> list[EntryColumn]:
        found = build(*args)
        made.extend(found)
        return found

    monkeypatch.setattr(planner_module, "ColumnLayouts", Kept)
    monkeypatch.setattr(planner_module, "entry_columns", recording)
    with stamping(True):
        plan = compile_plan(_model() if layers is None else scaling_model(layers),
                            [scaling_spec()])
    assert len(books) == 1
    return plan, books[0], made
@contextlib.contextmanager
def _book_on(plan: Any, book: ColumnLayouts | None) -> Iterator[None]:
    """``book`` as the plan's layout book while the block runs (a compile's, then none)."""
    plan.tensors.layouts = book
    try:
        yield
    finally:
        plan.tensors.layouts = None


def _lying_book(plan: Any, book: ColumnLayouts, made: list[EntryColumn], lie: dict[str, Any],
                *, with_template: bool = False) -> ColumnLayouts:
    """A book of every column's true record (``with_template``: its template's storage too),
    with ``lie`` written into the ``inv`` column's."""
    liar = ColumnLayouts()
    for column in made:
        true = book.common(column.storages)
        if true is None:
            continue
        storages = [plan.entries[column.template].storage, *column.storages] \
            if with_template else column.storages
        liar.add(storages, dataclasses.replace(true, **lie) if column.name == "inv" else true)
    return liar


def test_the_compile_records_every_allocated_column(monkeypatch: pytest.MonkeyPatch) -> None:
    plan, book, made = _compile_keeping(monkeypatch)
    assert plan.tensors.layouts is None  # kept for the compile only
    allocated = [c for c in made if type(c) is EntryColumn]
    assert [c.name for c in allocated] == ["inv", "prod", "strides"]
    for column in allocated:
        layout = book.common(column.storages)
        assert layout is not None and layout.contiguous is True
        for storage in column.storages:  # the record against each storage, read one by one
            assert (type(storage), storage.dtype, storage.shape, storage.device,
                    storage.is_contiguous()) == \
                (layout.type, layout.dtype, layout.shape, layout.device, layout.contiguous)
        assert book.common([plan.entries[i].storage for i in column.ids]) is layout
    aliases = [c for c in made if type(c) is AliasColumn]
    assert aliases
    for column in aliases:  # not made here: the sources' tensors, recorded from the build's proof
        layout = book.common(column.storages)
        assert layout is not None and layout.type is torch.nn.Parameter
        for storage in column.storages:
            assert (type(storage), storage.dtype, storage.shape, storage.device,
                    storage.is_contiguous()) == \
                (layout.type, layout.dtype, layout.shape, layout.device, layout.contiguous)


def _holds(monkeypatch: pytest.MonkeyPatch, plan: Any, book: ColumnLayouts | None,
           ) -> list[bool]:
    """What ``_columns_hold`` answers for each table (the reader of the layer proof)."""
    answers: list[bool] = []
    real = lower_layers._columns_hold

    def spy(*args: Any) -> bool:
        answers.append(real(*args))
        return answers[-1]

    monkeypatch.setattr(lower_layers, "_columns_hold", spy)
    with _book_on(plan, book):
        lower_layers.provable_layers(plan.tensors)
    monkeypatch.setattr(lower_layers, "_columns_hold", real)
    return answers


def test_layer_proof_answers_as_the_sweeps(monkeypatch: pytest.MonkeyPatch) -> None:
    plan, book, _ = _compile_keeping(monkeypatch)
    assert _holds(monkeypatch, plan, book) == _holds(monkeypatch, plan, None) == [True]


def test_layer_proof_reads_a_tensor_not_made_by_the_column(
        monkeypatch: pytest.MonkeyPatch) -> None:
    plan, book, made = _compile_keeping(monkeypatch)
    entry = plan.entries[made[0].ids[3]]
    entry.storage = torch.zeros(entry.storage.shape[0] + 1)  # another shape, not in the book
    assert _holds(monkeypatch, plan, book) == _holds(monkeypatch, plan, None) == [False]


@pytest.mark.parametrize("lie", [{"dtype": torch.float64}, {"shape": torch.Size([9])},
                                 {"contiguous": False}, {"type": torch.nn.Parameter}])
def test_canary_layer_proof_goes_by_a_lying_record(monkeypatch: pytest.MonkeyPatch,
                                                   lie: dict[str, Any]) -> None:
    plan, book, made = _compile_keeping(monkeypatch)
    column = made[0]
    true = book.common(column.storages)
    assert true is not None
    liar = ColumnLayouts()
    liar.add(column.storages, dataclasses.replace(true, **lie))
    assert _holds(monkeypatch, plan, liar) == [False]  # the reader took the record
    assert _holds(monkeypatch, plan, None) == [True]


def _key_facts(monkeypatch: pytest.MonkeyPatch, plan: Any, book: ColumnLayouts | None,
               ) -> list[tuple[str, bool]]:
    """What ``same_key_facts`` answers for each written template step (the group keys'
    reader, over the full lowering: every row's step made), with ``book`` as the context's
    layout book."""
    from derivgraph.compiler import codegen, schedule_layers
    from derivgraph.compiler.lower import Action, lower_steps

    steps = lower_steps(plan.tensors).expanded()
    run, _ = codegen.stage_directly(plan.tensors, steps)
    answers: list[tuple[str, bool]] = []
    real = schedule_layers.same_key_facts

    def spy(ctx: Any, layer: Any, step: Any, n: int) -> bool:
        answer = real(ctx, layer, step, n)
        if step.action is Action.OUT:
            answers.append((step.target, answer))
        return answer

    monkeypatch.setattr(schedule_layers, "same_key_facts", spy)
    with _book_on(plan, book):
        schedule_layers.row_keys(plan.tensors, run, steps.layers, codegen._group_key)
    monkeypatch.setattr(schedule_layers, "same_key_facts", real)
    return answers


def test_group_keys_answer_as_the_sweeps(monkeypatch: pytest.MonkeyPatch) -> None:
    plan, book, _ = _compile_keeping(monkeypatch)
    mine = _key_facts(monkeypatch, plan, book)
    assert mine == _key_facts(monkeypatch, plan, None)
    assert mine == [("layers.0.inv", True), ("layers.0.prod", True)]


def test_group_keys_read_a_tensor_not_made_by_the_column(
        monkeypatch: pytest.MonkeyPatch) -> None:
    plan, book, made = _compile_keeping(monkeypatch)
    entry = plan.entries[made[0].ids[3]]  # inv of layer 4
    entry.storage = torch.zeros_like(entry.storage)  # its layout, not in the book
    assert book.common([plan.entries[i].storage for i in made[0].ids]) is None
    mine = _key_facts(monkeypatch, plan, book)
    assert mine == _key_facts(monkeypatch, plan, None)
    assert mine == [("layers.0.inv", True), ("layers.0.prod", True)]


@pytest.mark.parametrize("lie", [{"dtype": torch.float64}, {"shape": torch.Size([9])},
                                 {"contiguous": False}, {"type": torch.nn.Parameter},
                                 {"device": torch.device("meta")}])
def test_canary_group_keys_go_by_a_lying_record(monkeypatch: pytest.MonkeyPatch,
                                                lie: dict[str, Any]) -> None:
    plan, book, made = _compile_keeping(monkeypatch)
    liar = _lying_book(plan, book, made, lie)
    assert _key_facts(monkeypatch, plan, liar) == [("layers.0.inv", False),
                                                   ("layers.0.prod", True)]


def test_the_compile_admits_each_columns_template(monkeypatch: pytest.MonkeyPatch) -> None:
    plan, book, made = _compile_keeping(monkeypatch)
    for column in made:
        if type(column) is EntryColumn:
            storages = [plan.entries[column.template].storage, *column.storages]
            assert book.common(storages) is book.common(column.storages) is not None
    stranger = ColumnLayout(torch.Tensor, torch.float64, torch.Size([8]), torch.device("cpu"),
                            True)
    assert not book.admit(torch.zeros(8), stranger)  # its facts are read: float32
    assert book.of([torch.zeros(8)]) == [None]


def _program(plan: Any, book: ColumnLayouts | None) -> str:
    """The source of the pass built over ``plan``'s steps, ``book`` as the layout book."""
    from derivgraph.compiler import codegen
    from derivgraph.compiler.lower import lower_steps

    steps = lower_steps(plan.tensors)
    with _book_on(plan, book):
        return codegen.build_program(plan.tensors, codegen.Bindings(), steps, "p").source


#: layers enough for a flat group (``flat.MIN_GROUP``)
FLAT_LAYERS = 40


def test_flat_groups_answer_as_the_sweeps(monkeypatch: pytest.MonkeyPatch) -> None:
    plan, book, _ = _compile_keeping(monkeypatch, FLAT_LAYERS)
    mine = _program(plan, book)
    assert mine == _program(plan, None)
    assert mine.count("index_copy_") == 2  # inv and prod: each one flat group of 40


@pytest.mark.parametrize("lie", [{"contiguous": False}, {"dtype": torch.int16},
                                 {"shape": torch.Size([1 << 20])}])
def test_canary_flat_groups_go_by_a_lying_record(monkeypatch: pytest.MonkeyPatch,
                                                 lie: dict[str, Any]) -> None:
    plan, book, made = _compile_keeping(monkeypatch, FLAT_LAYERS)
    inv = made[0]
    true = book.common(inv.storages)
    assert inv.name == "inv" and true is not None
    liar = ColumnLayouts()
    liar.add([plan.entries[inv.template].storage, *inv.storages], dataclasses.replace(true, **lie))
    assert _program(plan, liar).count("index_copy_") == 1  # inv's group refused


def _pairs(plan: Any, made: list[EntryColumn]) -> list[tuple[Any, Any]]:
    """(storage, value) of every allocated column's rows: the bit check's pairs (the storages
    hold their values since the compile's first pass)."""
    return [(s, s.clone()) for c in made if type(c) is EntryColumn for s in c.storages]


def _checked(monkeypatch: pytest.MonkeyPatch, pairs: list[tuple[Any, Any]],
             book: ColumnLayouts | None) -> tuple[list[bool], int]:
    """``_bits_equal_all`` of ``pairs`` and how many pairs it compared one by one."""
    compared = []
    real = planner_module.bits_equal

    def counting(a: Any, b: Any) -> bool:
        compared.append(1)
        return real(a, b)

    monkeypatch.setattr(planner_module, "bits_equal", counting)
    try:
        return planner_module._bits_equal_all(pairs, book), len(compared)
    finally:
        monkeypatch.setattr(planner_module, "bits_equal", real)


def test_bit_check_answers_as_the_sweeps(monkeypatch: pytest.MonkeyPatch) -> None:
    plan, _, made = _compile_keeping(monkeypatch)
    pairs = _pairs(plan, made)
    book = ColumnLayouts()
    for column in made:
        if type(column) is EntryColumn:
            layout = column_layout(column.storages)
            assert layout is not None
            book.add(column.storages, layout)
            book.add([theirs for ours, theirs in pairs if any(ours is s for s in
                                                               column.storages)], layout)
    assert _checked(monkeypatch, pairs, book) == _checked(monkeypatch, pairs, None) \
        == ([True] * 33, 0)
    pairs[4][1][2] += 1.0  # one pair differs: its batch is compared pair by pair
    pairs[15] = (pairs[15][0], torch.zeros(9))  # another shape, not in the book
    pairs[16] = (pairs[16][0], pairs[16][1].clone())  # its layout, not in the book
    mine = _checked(monkeypatch, pairs, book)
    assert mine == _checked(monkeypatch, pairs, None)
    assert mine[0] == [i not in (4, 15) for i in range(33)]


def test_canary_bit_check_goes_by_a_lying_record(monkeypatch: pytest.MonkeyPatch) -> None:
    plan, _, made = _compile_keeping(monkeypatch)
    pairs = _pairs(plan, made)
    liar = ColumnLayouts()  # every tensor complex: no batch, each pair on its own
    lie = ColumnLayout(torch.Tensor, torch.complex64, torch.Size([8]), torch.device("cpu"))
    liar.add([t for pair in pairs for t in pair], lie)
    assert _checked(monkeypatch, pairs, liar) == ([True] * 33, 33)


def _refill_facts(table: Any) -> tuple[Any, ...]:
    """What a refill table precomputes (order, layouts, sizes, spans, flat runs, its guard)."""
    return (table.ids, table.index, table.dtypes, [tuple(s) for s in table.shapes],
            table.nbytes, table.spans, [(a, b) for a, b, _ in table.flat], table.whole,
            table.complete, table._layouts._guard is not None, table._layouts._guards)


def _refill_table(plan: Any, book: ColumnLayouts | None) -> Any:
    from derivgraph.runtime.engine import RefillTable

    return RefillTable(plan.holders.table, plan._refill_targets(), set(plan.constant_entries),
                       set(plan._opaque()), book)


def test_refill_table_answers_as_the_sweeps(monkeypatch: pytest.MonkeyPatch) -> None:
    plan, book, made = _compile_keeping(monkeypatch)
    mine = _refill_facts(_refill_table(plan, book))
    assert mine == _refill_facts(_refill_table(plan, None))
    assert mine == _refill_facts(plan._refill_table)  # the compile's, made with the book
    assert mine[2].count(torch.float32) == 24 and mine[2].count(torch.int64) == 12
    assert mine[9]  # its layout guard built
    part = ColumnLayouts()  # a book without strides: every storage read
    for column in made[:2]:
        part.add(column.storages, book.common(column.storages))  # type: ignore[arg-type]
    assert _refill_facts(_refill_table(plan, part)) == mine


@pytest.mark.parametrize("lie", [{"dtype": torch.float64}, {"shape": torch.Size([2, 4])}])
def test_canary_refill_table_goes_by_a_lying_record(monkeypatch: pytest.MonkeyPatch,
                                                    lie: dict[str, Any]) -> None:
    plan, book, made = _compile_keeping(monkeypatch)
    table = _refill_table(plan, _lying_book(plan, book, made, lie, with_template=True))
    assert _refill_facts(table) != _refill_facts(_refill_table(plan, None))
    key, value = next(iter(lie.items()))
    assert (table.dtypes if key == "dtype" else table.shapes).count(value) == 12


def test_admit_proves_row_major_strides() -> None:
    layout = ColumnLayout(torch.Tensor, torch.float32, torch.Size([2, 1, 3]),
                          torch.device("cpu"), True)
    book = ColumnLayouts()
    odd = torch.empty(2, 1, 3).as_strided((2, 1, 3), (3, 7, 1))  # contiguous, not row-major
    assert odd.is_contiguous() and not book.admit(odd, layout)
    assert book.admit(torch.empty(2, 1, 3), layout)
    assert not book.admit(torch.empty(2, 1, 3), ColumnLayout(
        torch.Tensor, torch.float32, torch.Size([2, 1, 3]), torch.device("cpu"), False))


def test_span_of_run_is_span_of() -> None:
    from derivgraph.compiler import flat

    tensors = [torch.zeros(4, 2) for _ in range(6)]
    mine = flat.span_of_run(tensors, torch.float32, torch.Size([4, 2]))
    sweeps = flat.span_of(tensors)
    assert mine is not None and sweeps is not None
    assert (mine.low, mine.itemsize, mine.view.shape) == \
        (sweeps.low, sweeps.itemsize, sweeps.view.shape)
    assert flat.span_of_run([], torch.float32, torch.Size([4])) is None
    assert flat.span_of_run([torch.zeros(0)], torch.float32, torch.Size([0])) is None


def _flat_facts(table: Any) -> list[tuple[Any, ...]]:
    """Each flat copy of a refill table: its run, rows, starts and buffer."""
    return [(a, b, c.rows.shape, c.starts.tolist(), c.buf.shape, c.buf.dtype)
            for a, b, c in table.flat]


def test_refill_flat_runs_answer_as_the_sweeps(monkeypatch: pytest.MonkeyPatch) -> None:
    from derivgraph.runtime import flat_copy

    plan, book, _ = _compile_keeping(monkeypatch, FLAT_LAYERS)
    calls: list[bool] = []
    real = flat_copy.flat.span_of_run

    def counting(*args: Any) -> Any:
        calls.append(True)
        return real(*args)

    monkeypatch.setattr(flat_copy.flat, "span_of_run", counting)
    mine = _flat_facts(_refill_table(plan, book))
    assert len(calls) == 2  # float32 (inv, prod: 80 targets), int64 (strides: 40)
    assert mine == _flat_facts(_refill_table(plan, None)) and len(mine) == 2
    assert len(calls) == 2  # without the book: the sweeps


def test_canary_refill_flat_runs_go_by_a_lying_record(monkeypatch: pytest.MonkeyPatch) -> None:
    plan, book, made = _compile_keeping(monkeypatch, FLAT_LAYERS)
    liar = ColumnLayouts()
    for column in made:
        true = book.common(column.storages)
        if true is None:
            continue
        shape = torch.Size([16]) if column.name == "strides" else true.shape
        liar.add([plan.entries[column.template].storage, *column.storages],
                 ColumnLayout(true.type, true.dtype, shape, true.device, True))
    lied = _flat_facts(_refill_table(plan, liar))
    truth = _flat_facts(_refill_table(plan, None))
    assert [f[:2] for f in lied] != [f[:2] for f in truth] or \
        [f[2] for f in lied] != [f[2] for f in truth]


def test_column_layout_of_one_object_reads_it_once() -> None:
    shared = torch.zeros(3, dtype=torch.int64)
    layout = column_layout([shared] * 4)
    assert layout is not None and (layout.dtype, layout.shape) == (torch.int64, (3,))


def test_evaluated_columns_are_recorded_where_one_call_made_them(
        monkeypatch: pytest.MonkeyPatch) -> None:
    from derivgraph.compiler import columns

    kept: dict[str, Any] = {}
    evaluate = planner_module._evaluate_all

    def keeping(*args: Any) -> Any:
        kept.update(evaluate(*args))
        return kept

    recorded: list[tuple[Any, ...]] = []
    record = columns._record

    def recording(book: ColumnLayouts, values: tuple[Any, ...]) -> None:
        recorded.append(values)
        record(book, values)

    monkeypatch.setattr(planner_module, "_evaluate_all", keeping)
    monkeypatch.setattr(columns, "_record", recording)
    plan, book, made = _compile_keeping(monkeypatch)
    assert len(recorded) == 2  # the two exact ops' columns: 1.0 / scale, scale * weight
    for column in made:
        if type(column) is not EntryColumn:
            continue
        values = [kept[i] for i in column.ids]
        layout = book.common(values)
        assert layout is not None
        for value in values:
            assert (type(value), value.dtype, value.shape, value.device) == \
                (layout.type, layout.dtype, layout.shape, layout.device)
        made_by_one_call = any(all(a is b for a, b in zip(values, r)) for r in recorded)
        assert made_by_one_call == (column.name in ("inv", "prod"))
