"""An operand column the layout book holds is proved once and read as the book's own sequence.

:meth:`~derivgraph.column_layout.ColumnLayouts.held` finds the recorded column whose very
tensors a sequence is (one identity sweep; none for that column itself), and
:meth:`~derivgraph.column_layout.ColumnLayouts.common` answers through it. The evaluator's
operand check (:func:`derivgraph.compiler.columns._tensors`, "every value a tensor") takes a
held column of a tensor class as proof and hands on the book's sequence, so that its later
readers (the record read by ``_column``, a stack's identity check, ``admit_templates``) find
that very sequence instead of sweeping a copy again. Each is asserted against the reference:
the ``isinstance`` sweep and the per-ref loop (the same objects, the same env), and the
evaluation without a book (bit for bit). Canaries: ``held`` trusting the first tensor and the
length (no identity sweep), and ``_tensors`` taking a record of a class that is no tensor
class, turn tests here red.
"""

from __future__ import annotations

from itertools import repeat
from typing import Any

import pytest
import torch

import derivgraph.compiler.columns as columns
from derivgraph.column_layout import ColumnLayout, ColumnLayouts
from derivgraph.compare import bits_equal
from derivgraph.compiler.bind import match_specs
from derivgraph.compiler.build import build_graph
from derivgraph.compiler.layers import closed_layers
from derivgraph.planner import CompileValues, _evaluate_all, _record_sources
from derivgraph.tools.bench_scaling import scaling_model, scaling_spec
from tests.fixtures.counting_reads import CountingReads

N = 40
_CPU = torch.device("cpu")


def _column(n: int = N, cls: type = torch.nn.Parameter) -> list[Any]:
    return [cls(torch.rand(3), requires_grad=False) if cls is torch.nn.Parameter
            else torch.rand(3) for _ in range(n)]


def _book(tensors: list[Any]) -> tuple[ColumnLayouts, ColumnLayout]:
    book = ColumnLayouts()
    record = ColumnLayout(type(tensors[0]), torch.float32, torch.Size([3]), _CPU, True)
    book.add(tensors, record, source=True)
    return book, record


def _reference_held(book_column: list[Any], tensors: list[Any]) -> bool:
    """The rule: the very tensors, one by one, in order, as many."""
    return len(book_column) == len(tensors) and all(a is b for a, b in zip(book_column, tensors))


@pytest.mark.parametrize("case", ["very", "copy", "first", "middle", "last", "shorter",
                                  "longer", "reversed", "equal_values"])
def test_held_is_the_recorded_column_exactly_where_its_very_tensors_are_asked(case: str) -> None:
    tensors = _column()
    book, record = _book(tensors)
    asked: list[Any] = tensors if case == "very" else list(tensors)
    if case in ("first", "middle", "last"):
        at = {"first": 1, "middle": N // 2, "last": N - 1}[case]  # (row 0 finds the column)
        asked[at] = torch.rand(3)
    elif case == "shorter":
        asked.pop()
    elif case == "longer":
        asked.append(tensors[0])
    elif case == "reversed":
        asked.reverse()
        asked.insert(0, asked.pop())  # row 0 still the column's first: found, then refused
    elif case == "equal_values":
        asked[N // 3] = asked[N // 3].detach().clone()  # equal bits, another object
    held = book.held(asked)
    if _reference_held(tensors, asked):
        assert held is not None and held[0] is tensors and held[1] is record
        assert book.common(asked) is record
    else:
        assert held is None
        every = {id(t) for t in tensors}.issuperset(map(id, asked))  # each held, one by one
        assert book.common(asked) is (record if every else None)


def test_held_of_nothing_or_of_an_unrecorded_column_is_none() -> None:
    tensors = _column()
    book, _ = _book(tensors)
    assert book.held([]) is None
    assert book.held(_column()) is None
    assert book.held(tensors[1:]) is None  # a run inside the column: not the column


def test_a_held_column_of_tensors_is_answered_as_the_books_own_sequence() -> None:
    tensors = _column()
    book, _ = _book(tensors)
    asked = list(tensors)
    got = columns._tensors(asked, book)
    assert got is tensors  # the book's sequence: later readers skip their sweeps
    assert columns._tensors(asked) is asked  # no book: the list itself, as before
    assert columns._tensors(tuple(asked)) == asked  # a tuple: a list of its items


@pytest.mark.parametrize("at", [0, N // 2, N - 1])
def test_a_column_with_a_value_that_is_no_tensor_is_refused_with_a_book(at: int) -> None:
    tensors = _column()
    book, _ = _book(tensors)
    asked: list[Any] = list(tensors)
    asked[at] = 3.0
    assert columns._tensors(asked, book) is None
    assert columns._tensors(asked) is None


def test_a_record_of_a_class_that_is_no_tensor_class_proves_nothing() -> None:
    """A record over values of another class (a planted book entry): ``isinstance`` decides."""
    values = [float(i) for i in range(N)]
    book = ColumnLayouts()
    book.add(values, ColumnLayout(float, torch.float32, torch.Size([]), _CPU))
    assert book.held(list(values)) is not None
    assert columns._tensors(list(values), book) is None


def test_a_record_of_plain_tensors_proves_them_tensors() -> None:
    tensors = _column(cls=torch.Tensor)
    book, _ = _book(tensors)
    assert all(isinstance(t, torch.Tensor) for t in tensors)
    assert columns._tensors(list(tensors), book) is tensors


# ---- the evaluator's operand columns -------------------------------------------------------

LAYERS = 12


def _graph() -> Any:
    torch.manual_seed(0)
    model = scaling_model(LAYERS)
    return build_graph(model, match_specs(model, [scaling_spec()]))


def _source_columns(graph: Any) -> list[list[str]]:
    table = closed_layers(graph)[0]
    nodes = graph.nodes
    return [table.column(k) for k, t in enumerate(table.template)
            if nodes[t].kind is columns._SOURCE]


def test_an_unread_source_column_the_book_holds_is_kept_as_the_books_column() -> None:
    graph = _graph()
    sources = dict(graph.read_sources)
    book = ColumnLayouts()
    _record_sources(book, graph)
    for refs in _source_columns(graph):
        held = book.held([sources[r] for r in refs])
        assert held is not None
        env = columns.ColumnValues()
        reads = CountingReads(sources)
        got = columns._operands(env, reads, refs, True, sources, True, book)
        assert got is held[0] and reads.calls == 0
        assert env.rows(refs) is held[0]  # kept: the readers after it find the very column
        loop_env: dict[str, Any] = {}
        want = columns._operands(loop_env, CountingReads(sources), refs, True)  # the per-ref loop
        assert want is not None and len(want) == len(got) \
            and all(map(lambda a, b: a is b, want, got))
        assert all(env[r] is loop_env[r] for r in refs)  # the env as the loop leaves it


def test_a_source_column_with_one_other_object_is_read_as_before() -> None:
    graph = _graph()
    sources = dict(graph.read_sources)
    book = ColumnLayouts()
    _record_sources(book, graph)
    refs = _source_columns(graph)[0]
    sources[refs[5]] = sources[refs[5]].detach().clone()  # not the recorded tensor
    env = columns.ColumnValues()
    got = columns._operands(env, CountingReads(sources), refs, True, sources, True, book)
    assert got is not None and type(got) is list
    assert all(map(lambda r, v: sources[r] is v, refs, got))
    assert book.held(got) is None and env.rows(refs) is got


def test_the_evaluation_with_held_operands_is_the_evaluation_without_a_book() -> None:
    """The planner's evaluation (:func:`~derivgraph.planner._evaluate_all`): with the book,
    each source operand column is kept as the book's column and the templates are admitted
    under its record; every value bit for bit the per-node evaluation's."""
    graph = _graph()
    sources = dict(graph.read_sources)
    book = ColumnLayouts()
    _record_sources(book, graph)
    got = _evaluate_all(graph, sources, book)
    for refs in _source_columns(graph):
        held = book.held(list(map(sources.__getitem__, refs)))
        assert held is not None and got.rows(refs) is held[0]
    apart = _evaluate_all(graph, dict(graph.read_sources))  # no book
    with torch.no_grad():
        want = CompileValues(graph).run()
    for values in (got, apart):
        assert values.keys() == want.keys()
        assert all(bits_equal(values[k], want[k]) for k in want)
    assert all(map(isinstance, got.values(), repeat(torch.Tensor)))
