"""The layout book's fresh columns (:class:`derivgraph.column_layout.ColumnLayouts`): a column
the caller just made (``add(..., fresh=True)``, and the first column of an empty book) is kept
as a column, not per tensor; every other add and every admit per tensor. Each answer
(:meth:`~ColumnLayouts.of`, :meth:`~ColumnLayouts.common`, ``len``, truth) is checked against
the per-tensor reference: a dict updated by every add and admit in their order (the last
record given a tensor is its record). The compile's own book answers every query of a
stamped compile without making its per-tensor table."""

from __future__ import annotations

import random
from typing import Any

import pytest
import torch

import derivgraph.column_layout as column_layout
from derivgraph.column_layout import ColumnLayout, ColumnLayouts, one_layout
from derivgraph.planner import compile_plan
from derivgraph.tools.bench_scaling import scaling_model, scaling_spec


def _record(dtype: torch.dtype = torch.float32, contiguous: bool | None = True) -> ColumnLayout:
    return ColumnLayout(torch.Tensor, dtype, torch.Size([2]), torch.device("cpu"), contiguous)


class _Reference:
    """The book as a per-tensor dict (what every add and admit's update makes), and the
    columns by their first tensor (the last added), as :meth:`ColumnLayouts.common` reads
    them: a recorded column (or one after a first tensor) in its order answers by its
    record, any other query by every tensor's."""

    def __init__(self) -> None:
        self.of: dict[int, ColumnLayout] = {}
        self.columns: dict[int, tuple[list[Any], ColumnLayout]] = {}

    def add(self, tensors: list[Any], layout: ColumnLayout, column: bool = True) -> None:
        if tensors and column:
            self.columns[id(tensors[0])] = (tensors, layout)
        self.of.update((id(t), layout) for t in tensors)

    def _is(self, tensors: list[Any], at: int) -> ColumnLayout | None:
        found = self.columns.get(id(tensors[at])) if len(tensors) > at else None
        if found is None or len(found[0]) != len(tensors) - at \
                or any(a is not b for a, b in zip(tensors[at:], found[0])):
            return None
        return found[1]

    def common(self, tensors: list[Any]) -> ColumnLayout | None:
        if not tensors or id(tensors[0]) not in self.of:
            return None
        whole = self._is(tensors, 0)
        if whole is not None:
            return whole
        rest = self._is(tensors, 1)
        if rest is not None:
            return one_layout([self.of[id(tensors[0])], rest])
        return one_layout([self.of.get(id(t)) for t in tensors])


def _built(seed: int) -> tuple[ColumnLayouts, _Reference, list[list[torch.Tensor]],
                               list[torch.Tensor]]:
    """A book and its reference after a random mix of fresh columns (new tensors), loose
    columns (parts of earlier columns, strangers, repeats) and admits."""
    rng = random.Random(seed)
    book, ref = ColumnLayouts(), _Reference()
    columns: list[list[torch.Tensor]] = []
    every: list[torch.Tensor] = []
    records = [_record(), _record(contiguous=None), _record(torch.float64)]
    for _ in range(rng.randrange(3, 9)):
        record = rng.choice(records)
        kind, column = rng.random(), True
        if kind < 0.5 or not every:  # fresh: tensors made just now
            tensors = [torch.zeros(2, dtype=record.dtype) for _ in range(rng.randrange(1, 30))]
            if rng.random() < 0.2:  # one shared object, repeated
                tensors = [tensors[0]] * len(tensors)
            book.add(tensors, record, fresh=True)
        elif kind < 0.8:  # loose: some held tensors again, with strangers
            tensors = rng.sample(every, rng.randrange(1, len(every) + 1))
            tensors += [torch.zeros(2) for _ in range(rng.randrange(0, 3))]
            book.add(tensors, record)
        else:
            tensors, column = [rng.choice(every)], False  # a record of its facts (admit reads them)
            record = rng.choice([r for r in records if r.dtype == tensors[0].dtype])
            assert book.admit(tensors[0], record)
        ref.add(tensors, record, column)
        columns.append(tensors)
        every += tensors
    return book, ref, columns, every


def _queries(rng: random.Random, columns: list[list[torch.Tensor]],
             every: list[torch.Tensor]) -> list[list[Any]]:
    strangers = [torch.zeros(2) for _ in range(8)]
    out: list[list[Any]] = [[], strangers[:1], strangers, every, every[::-1]]
    for column in columns:
        out += [column, column[1:], [strangers[0], *column], column[::-1]]
    for _ in range(20):  # interleaved columns (runs at one step), parts, misses few and many
        a, b = rng.choice(columns), rng.choice(columns)
        m = min(len(a), len(b))
        mixed = [t for pair in zip(a[:m], b[:m]) for t in pair]
        out.append(mixed)
        out.append(mixed + strangers[:rng.randrange(0, 8)])
        out.append(rng.sample(every, rng.randrange(1, len(every) + 1)))
    return out


@pytest.mark.parametrize("seed", range(40))
def test_every_answer_is_the_per_tensor_ones(seed: int) -> None:
    book, ref, columns, every = _built(seed)
    rng = random.Random(1000 + seed)
    assert len(book) == len(ref.of) and bool(book) == bool(ref.of)
    for query in _queries(rng, columns, every):
        assert [r is None for r in book.of(query)] == [ref.of.get(id(t)) is None
                                                      for t in query]
        assert book.of(query) == [ref.of.get(id(t)) for t in query]
        assert book.common(query) is ref.common(query)


def test_a_loose_record_given_later_is_the_tensors_record() -> None:
    made = [torch.zeros(2) for _ in range(6)]
    book = ColumnLayouts()
    fresh, later, other = _record(), _record(contiguous=None), _record(torch.float64)
    book.add([torch.zeros(2)], other)  # the first column: fresh on an empty book
    book.add(made, fresh, fresh=True)
    book.add(made[2:4], later)  # a loose column over two of them
    assert book.of(made) == [fresh, fresh, later, later, fresh, fresh]
    assert book.of(made[::2]) == [fresh, later, fresh]
    assert book.common(made[2:4]) is later
    assert book.common(made[3:]) is None or book.common(made[3:]).facts != fresh.facts


def test_one_tensor_is_found_in_a_fresh_column_by_its_id_words() -> None:
    made = [torch.zeros(2) for _ in range(50)]
    book = ColumnLayouts()
    first, second = _record(), _record(torch.float64)
    book.add([torch.zeros(2)], first)
    book.add(made[:25], first, fresh=True)
    assert book.common([made[3], made[3]]) is first  # the id words made: the first column's
    book.add(made[25:], second, fresh=True)  # a column added after them: its words made too
    for i in (0, 7, 24, 25, 49):  # not a column's first: the id words answer
        want = first if i < 25 else second
        assert book.common([made[i], made[i]]) is want
        assert book.of([torch.zeros(2), made[i]]) == [None, want]
    assert book.common([torch.zeros(2)]) is None
    assert book._all is None  # no per-tensor table made for a few tensors


def test_the_id_words_are_each_fresh_columns_ids_as_machine_words() -> None:
    """``_fresh_words`` (numpy's ``fromiter``) gives each fresh column's ids as the machine
    words ``array("Q")`` makes of them, in the log's order (an empty fresh column: no words);
    a column added later is made at the next call, the earlier ones kept (the same bytes)."""
    from array import array

    made = [torch.zeros(2) for _ in range(40)]
    book = ColumnLayouts()
    first, second = _record(), _record(torch.float64)
    book.add(made[:10], first)  # the first column of an empty book: fresh
    book.add(made[10:20], second)  # not fresh: no words
    book.add([], first, fresh=True)
    book.add(made[20:33], second, fresh=True)
    words = book._fresh_words()
    assert [(w, r) for w, r in words] == [
        (array("Q", map(id, made[:10])).tobytes(), first), (b"", first),
        (array("Q", map(id, made[20:33])).tobytes(), second)]
    kept = words[0][0]
    book.add(made[33:], first, fresh=True)
    again = book._fresh_words()
    assert again[0][0] is kept and len(again) == 4
    assert again[3] == (array("Q", map(id, made[33:])).tobytes(), first)
    for i in (0, 9, 20, 32, 33, 39):  # each found by its id words: its column's record
        assert book._record(made[i]) is (second if 20 <= i < 33 else first)
    assert book._record(torch.zeros(2)) is None


def test_a_stamped_compile_makes_no_per_tensor_table(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every book query of a stamped compile (sources, evaluated columns, entry columns'
    storages, the refill table's, the bit check's) is answered by its columns."""
    made: list[int] = []
    table = ColumnLayouts._table

    def spy(self: ColumnLayouts) -> Any:
        made.append(len(self._log))
        return table(self)

    compile_plan(scaling_model(50), [scaling_spec()])
    monkeypatch.setattr(column_layout.ColumnLayouts, "_table", spy)
    plan = compile_plan(scaling_model(50), [scaling_spec()])
    assert plan.graph.stamped and not made
