"""A stamped row's replay record answers what the front half read of its nodes (rows39 DESIGN
6b, step (b2)).

* ``source_deps``: a closed row's sets are read off its template by position; the sweep
  walks the rest only (no row node looked up: a counting ``Graph.nodes``).
* shape inference: a closed row's sources have the layout its template's probes proved
  (``InstanceTable.layouts``, the same facts in every row), so no row source is looked up;
  a source position the record does not give is read per row, as before.

A row whose replay read a proven source itself (its probes did not give the tensor: a
matcher planted to ignore the facts) turns the record's layouts off for its table, and every
row's sources are read. Canaries: a row source's node planted with another dtype after
building is taken from the record (the record is what is read), and read per row again when
the record is emptied; with the record turned back on, the float16 row takes the template's
float32.
"""

from __future__ import annotations

from typing import Any

import pytest
import torch

from derivgraph.compiler import infer, layers
from derivgraph.compiler.bind import match_specs
from derivgraph.compiler.build import build_graph
from derivgraph.compiler.graph import DerivedGraph
from derivgraph.compiler.stamp import stamping
from derivgraph.tools.bench_scaling import scaling_model, scaling_spec
from tests.compiler.test_row_readers import _Counting
from tests.compiler.test_stamp_phases import _fp16_second_layer

LAYERS = 6


def _graph() -> DerivedGraph:
    torch.manual_seed(0)
    model = scaling_model(LAYERS)
    with stamping(True):
        return build_graph(model, match_specs(model, [scaling_spec()]))


def _counting(graph: DerivedGraph) -> set[str]:
    """Swap ``graph``'s nodes for a counting dict of its closed rows' lookups."""
    rows = layers.layer_nodes(layers.closed_layers(graph))
    assert len(rows) == 8 * (LAYERS - 1)
    graph.ir.nodes = _Counting(graph.ir.nodes)
    _Counting.rows, _Counting.hits = rows, 0
    return rows


def _stamped_meta(graph: DerivedGraph) -> tuple[Any, dict[str, Any]]:
    interp = infer._StampedMeta(graph, {})
    return infer._run_stamped(graph, interp), interp.env


def test_the_record_gives_each_rows_source_layouts() -> None:
    graph = _graph()
    [table] = graph.stamps
    scale, weight = graph.nodes["layers.0.scale"], graph.nodes["layers.0.weight"]
    # positions 4 and 6: scale and weight (layer 0's nodes: inv, prod, strides, scale_alias,
    # scale, the div, weight, the mul)
    assert table.layouts == {4: (scale.shape, scale.stride, scale.dtype, scale.device),
                             6: (weight.shape, weight.stride, weight.dtype, weight.device)}
    assert table.subset([True] * len(table)).layouts is table.layouts


def test_source_deps_and_meta_look_up_no_row_node() -> None:
    graph = _graph()
    want_env = dict(graph.meta_env)
    graph._deps_version = -1
    walked_rows = _counting(graph)
    deps = graph.source_deps()
    assert _Counting.hits == 0
    assert deps["layers.3.prod"] == frozenset({"layers.3.scale", "layers.3.weight"})
    assert len(deps) == len(graph.nodes)
    stamped, env = _stamped_meta(graph)
    assert _Counting.hits == 0
    assert stamped.rest is not None and walked_rows.isdisjoint(stamped.rest)
    for node_id in walked_rows:
        got, want = env[node_id], want_env[node_id]
        assert (got.shape, got.dtype) == (want.shape, want.dtype), node_id


def test_a_position_the_record_does_not_give_is_read_per_row() -> None:
    graph = _graph()
    [table] = graph.stamps
    del table.layouts[6]
    _counting(graph)
    _stamped_meta(graph)
    assert _Counting.hits == LAYERS - 1  # each row's weight, once


def test_canary_the_record_is_what_is_read() -> None:
    """Planted after building: layer 3's ``scale`` node says float64. With the record its
    row takes the template's values (float32: the record, not the node, is read); with the
    record emptied the row is inferred on its own (its ``prod`` float64)."""
    graph = _graph()
    graph.nodes["layers.3.scale"].dtype = torch.float64
    [table] = layers.closed_layers(graph)
    _, env = _stamped_meta(graph)
    assert env["layers.3.prod"].dtype == torch.float32
    table.layouts.clear()
    stamped, env = _stamped_meta(graph)
    assert env["layers.3.prod"].dtype == torch.float64
    assert stamped.rest is not None and "layers.3.prod" in stamped.rest


def test_a_row_that_read_its_source_itself_turns_the_record_off(
        monkeypatch: pytest.MonkeyPatch) -> None:
    graph = _fp16_second_layer(monkeypatch)
    [table] = graph.stamps
    assert table.layouts and not table.layouts_hold
    assert graph.derived["layers.1.inv"].meta.dtype == torch.float16
    table.layouts_hold = True  # planted: the record trusted
    _, env = _stamped_meta(graph)
    assert env["layers.1.inv"].dtype == torch.float32  # the template's: wrong
