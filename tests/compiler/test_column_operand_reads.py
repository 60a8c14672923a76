"""A column's operands read in sweeps: the build's source reads and the layout book's records.

:func:`derivgraph.compiler.columns._operands` takes a column of sources none of which is in the
env yet from ``sources`` (what ``read_source`` answers for the paths it holds: the build's
reads) in one sweep, and any other mix through its per-ref loop (each read by
``read_source``). :func:`~derivgraph.compiler.columns._column` takes an operand column's one
shape, dtype and device from the layout book's record of its tensors (a source column the build
proved, an evaluated column) instead of reading every tensor. Asserted against the per-ref
loop (the same objects, the same env) and against the evaluation without sources and book (bit
for bit, every node). Canaries: the sweep taken where one ref is not in ``sources``, or where
some refs are in the env already, and the record ignored, turn tests here red.
"""

from __future__ import annotations

from typing import Any

import pytest
import torch

import derivgraph.compiler.columns as columns
from derivgraph.column_layout import ColumnLayouts
from derivgraph.compare import bits_equal
from derivgraph.compiler.bind import match_specs
from derivgraph.compiler.build import build_graph
from derivgraph.compiler.layers import closed_layers
from derivgraph.planner import CompileValues, _record_sources
from derivgraph.tools.bench_scaling import scaling_model, scaling_spec
from tests.fixtures.counting_reads import CountingReads

LAYERS = 12


def _graph() -> Any:
    torch.manual_seed(0)
    model = scaling_model(LAYERS)
    return build_graph(model, match_specs(model, [scaling_spec()]))


def _source_column(graph: Any) -> list[str]:
    """The ``scale`` source column of the scaling table (read by ``1.0 / scale``)."""
    table = closed_layers(graph)[0]
    nodes = graph.nodes
    k = next(i for i, t in enumerate(table.template) if nodes[t].kind is columns._SOURCE)
    return table.column(k)


def _loop(env: dict[str, Any], sources: dict[str, Any], refs: list[str],
          source: bool = True) -> tuple[Any, dict[str, Any], int]:
    reads = CountingReads(sources)
    got = columns._operands(env, reads, refs, source)  # no sources: the per-ref loop
    return got, env, reads.calls


def _swept(env: dict[str, Any], sources: dict[str, Any], refs: list[str],
           source: bool = True) -> tuple[Any, dict[str, Any], int]:
    reads = CountingReads(sources)
    got = columns._operands(env, reads, refs, source, sources)
    return got, env, reads.calls


def _same(a: tuple[Any, dict[str, Any], int], b: tuple[Any, dict[str, Any], int]) -> None:
    assert (a[0] is None) == (b[0] is None)
    if a[0] is not None:
        assert len(a[0]) == len(b[0]) and all(map(lambda x, y: x is y, a[0], b[0]))
    assert a[1].keys() == b[1].keys() and all(a[1][k] is b[1][k] for k in a[1])


def test_a_column_of_unread_sources_is_read_in_one_sweep() -> None:
    refs = [f"l{i}.w" for i in range(10)]
    sources = {r: torch.rand(3) for r in refs}
    swept = _swept({}, sources, refs)
    assert swept[2] == 0  # read_source never called: taken from sources
    _same(swept, _loop({}, sources, refs))
    assert all(swept[0][i] is sources[r] for i, r in enumerate(refs))


def test_the_node_every_row_shares_read_once_as_the_loop_does() -> None:
    sources = {"shared.w": torch.rand(3)}
    refs = ["shared.w"] * 6
    _same(_swept({}, sources, refs), _loop({}, sources, refs))


@pytest.mark.parametrize("case", ["one_in_env", "one_not_in_sources", "not_a_tensor",
                                  "all_in_env", "not_sources"])
def test_any_other_column_is_what_the_loop_gives(case: str) -> None:
    refs = [f"l{i}.w" for i in range(8)]
    sources: dict[str, Any] = {r: torch.rand(3) for r in refs}
    env: dict[str, Any] = {}
    source = True
    if case == "one_in_env":
        env[refs[3]] = torch.rand(3)  # another object than the source: the env's is kept
    elif case == "one_not_in_sources":
        held = sources.pop(refs[5])
        sources_for_reads = dict(sources, **{refs[5]: held})
    elif case == "not_a_tensor":
        sources[refs[2]] = 3.0
    elif case == "all_in_env":
        env.update((r, torch.rand(3)) for r in refs)
    else:
        source = False
    reads_sources = sources_for_reads if case == "one_not_in_sources" else sources
    loop_reads = CountingReads(reads_sources)
    loop_env = dict(env)
    want = columns._operands(loop_env, loop_reads, refs, source)
    got_reads = CountingReads(reads_sources)
    got_env = dict(env)
    got = columns._operands(got_env, got_reads, refs, source, sources)
    _same((got, got_env, 0), (want, loop_env, 0))
    assert got_reads.calls == loop_reads.calls  # the same reads by read_source


def _count_shape_reads(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """``columns._shape`` counted: one item appended to the returned list per tensor read."""
    read: list[int] = []
    real = columns._shape

    def counted(t: Any) -> Any:
        read.append(1)
        return real(t)

    monkeypatch.setattr(columns, "_shape", counted)
    return read


def test_a_recorded_operand_column_is_not_read_per_tensor(
        monkeypatch: pytest.MonkeyPatch) -> None:
    graph = _graph()
    sources = dict(graph.read_sources)
    book = ColumnLayouts()
    _record_sources(book, graph)
    assert len(book) == 2 * (LAYERS - 1)  # the rows' scale and weight columns
    refs = _source_column(graph)
    assert book.common([sources[r] for r in refs]) is not None
    read = _count_shape_reads(monkeypatch)
    with torch.no_grad():
        interp = CompileValues(graph, sources)
        done = columns.evaluate_columns(graph, interp.env, interp.source_at, book, None,
                                        interp.sources)
        got = interp.run()
    monkeypatch.undo()
    assert done == 2 and read == []  # both operand columns answered by their records
    with torch.no_grad():
        want = CompileValues(graph).run()
    assert got.keys() == want.keys() and all(bits_equal(got[k], want[k]) for k in want)


def test_an_unrecorded_operand_column_is_read(monkeypatch: pytest.MonkeyPatch) -> None:
    graph = _graph()
    sources = dict(graph.read_sources)
    read = _count_shape_reads(monkeypatch)
    with torch.no_grad():
        interp = CompileValues(graph, sources)
        columns.evaluate_columns(graph, interp.env, interp.source_at, ColumnLayouts(), None,
                                 interp.sources)
    assert len(read) == 2 * (LAYERS - 1)  # scale and weight, each row read once
