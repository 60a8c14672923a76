"""The evaluation's records of a stamped compile's layout book: the column every row of which
reads one shared node (``fill_derived``'s ``[value] * n``) is recorded under its one layout,
and each closed table's template values are admitted under their column's record
(``admit_templates``), so that the compile's book never searches its fresh columns' id words
for a tensor it does not hold (each such search made the words of every fresh column: ~7 ms
at 100k). Every answer is checked against the facts read from the tensors themselves."""

from __future__ import annotations

import pytest
import torch

import derivgraph.column_layout as column_layout
from derivgraph.column_layout import ColumnLayout, ColumnLayouts
from derivgraph.compiler.columns import ColumnValues, admit_templates, fill_derived
from derivgraph.compiler.instances import InstanceTable
from derivgraph.planner import compile_plan
from derivgraph.tools.bench_scaling import scaling_model, scaling_spec


def _facts(t: torch.Tensor) -> tuple:
    return type(t), t.dtype, t.shape, t.device


def test_a_stamped_compile_never_makes_the_fresh_columns_id_words(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """At 40 layers (and so at 100k) every tensor the book is asked about is held: no
    query makes the id words (a not-held answer needs them all)."""
    made: list[int] = []
    words = column_layout.ColumnLayouts._fresh_words

    def counted(self: ColumnLayouts) -> list:
        made.append(len(self._log))
        return words(self)

    monkeypatch.setattr(column_layout.ColumnLayouts, "_fresh_words", counted)
    spec = scaling_spec()
    model = scaling_model(40)
    plan = compile_plan(model, [spec])
    assert made == []
    layer = model.layers[7]  # the plan's values are eager's
    assert torch.equal(layer.prod, layer.weight * layer.scale)
    assert plan is not None


def _table(template: list[str], rows: int) -> InstanceTable:
    return InstanceTable(tuple(template), [tuple(f"l{r}.{t}" for t in template)
                                           for r in range(1, rows + 1)])


def test_a_shared_input_column_is_recorded_where_the_book_holds_a_tensor() -> None:
    shared = torch.full((3,), 2.0)
    table = _table(["x", "d"], 5)
    env = ColumnValues()
    env["s"] = shared
    book = ColumnLayouts()
    fill_derived([(table, 1, None, "s")], env, book)  # an empty book: nothing recorded
    assert not book._log
    held = torch.zeros(2)
    book.add([held], ColumnLayout(torch.Tensor, held.dtype, held.shape, held.device, True))
    fill_derived([(table, 1, None, "s")], env, book)
    kept = env.rows(table.column(1))
    assert list(kept) == [shared] * 5 and all(v is shared for v in kept)
    record = book.common(kept)  # the very list: its record, no search
    assert record is not None and record.facts[:4] == _facts(shared)
    assert record.contiguous is None  # column_layout's: contiguity not read
    assert book._words == ([], 0)  # no id words made
    assert book.of([shared]) == [record]


def test_the_template_values_are_admitted_under_their_columns_record() -> None:
    rows = [torch.rand(4) for _ in range(6)]
    template = torch.rand(4)
    other = torch.rand(4, dtype=torch.float64)  # another dtype: not its column's record
    table = _table(["a", "b", "c", "n", "d", "m"], 6)
    env = ColumnValues()  # "d": the template's value again (an alias); "m": no value
    env.update({"a": template, "b": other, "c": rows[0], "n": 3.0, "d": template})
    book = ColumnLayouts()
    record = ColumnLayout(torch.Tensor, torch.float32, torch.Size([4]), torch.device("cpu"), True)
    book.add(rows, record, fresh=True)
    for k in range(6):
        env.keep(table.column(k), rows)
    log = len(book._log)
    admit_templates(book, [table], env)
    # the template admitted once (its facts are the record's), the other dtype not, the row
    # itself (already held), a number and a missing value left alone: one entry more
    assert len(book._log) == log + 1
    assert book._loose == {id(template): record}
    assert book.common([template, *rows]) is record
    assert book.of([other]) == [None]
    assert book.of([template, rows[0]]) == [record, record]
    assert not dict.__contains__(env, "l1.a")  # the dict's own keys read: no column put in


def test_a_template_of_other_strides_is_not_admitted() -> None:
    rows = [torch.rand(2, 2) for _ in range(4)]
    template = torch.rand(2, 2).t()  # the same shape and dtype, not row-major
    table = _table(["a"], 4)
    env = ColumnValues()
    env["a"] = template
    env.keep(table.column(0), rows)
    book = ColumnLayouts()
    record = ColumnLayout(torch.Tensor, torch.float32, torch.Size([2, 2]),
                          torch.device("cpu"), True)
    book.add(rows, record, fresh=True)
    admit_templates(book, [table], env)
    assert book.of([template]) == [None]
