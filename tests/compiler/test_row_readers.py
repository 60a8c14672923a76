"""The lowering half reads a closed stamped row through its table, never its ``ir.Node``
(rows39 DESIGN 6b, step (b1)).

* ``BoundViews.views``: a closed row has its template's ops position by position, so the rows
  of a template with no view op are not looked at; a template with a view op (``unsqueeze``
  over a source) keeps every row's view.
* ``planner._lower``'s constants: a closed row's op has no source dependency where its
  template's has none, so only the rows of a template with such an op (``c * 3.0`` over its
  own ``full``) are swept.
* ``evaluate_columns``: a column is the template's node and the table's ids; an open row is
  left to the per-node evaluation.

Each answer equals the plain (unstamped) compile's on a workload where it matters, and the
readers look up no row node (a counting ``Graph.nodes``). Canaries: with the view or the
constant rule planted away, the rows' views (constants) go missing.
"""

from __future__ import annotations

from typing import Any

import pytest
import torch
from torch import nn

import derivgraph.compiler.columns as columns
from derivgraph import DerivedTensor, Spec, Target, compile_plan, planner
from derivgraph.compare import bits_equal
from derivgraph.compiler import layers
from derivgraph.compiler.bind import match_specs
from derivgraph.compiler.build import build_graph
from derivgraph.compiler.graph import DerivedGraph
from derivgraph.compiler.stamp import stamping
from derivgraph.planner import CompileValues
from derivgraph.runtime import storage
from derivgraph.tools.bench_scaling import scaling_model, scaling_spec
from tests.compiler.test_open_rows import _model as _open_model
from tests.compiler.test_open_rows import _specs
from tests.compiler.test_stamp import _differences

LAYERS = 10


def _readers_spec() -> Spec:
    """A view op over a source in every layer, and an op of the layer's own with no source."""
    return Spec(name="readers", target=Target(module_class=["ScalingLayer"]),
                params={"E": "scale.shape[0]"}, derived=[
                    DerivedTensor(name="u", kind="attribute", formula="unsqueeze(weight, 0) * 2.0"),
                    DerivedTensor(name="c", kind="attribute", formula="full([E], 2.0)"),
                    DerivedTensor(name="d", kind="attribute", formula="c * 3.0")])


def _model() -> nn.Module:
    torch.manual_seed(0)
    return scaling_model(LAYERS)


def _plans(specs: list[Spec]) -> tuple[Any, Any]:
    """(plain, stamped) compiles of ``specs`` on the same weights."""
    with stamping(False):
        plain = compile_plan(_model(), specs)
    with stamping(True):
        stamped = compile_plan(_model(), specs)
    return plain, stamped


def _row_ids(graph: DerivedGraph) -> set[str]:
    return layers.layer_nodes(layers.closed_layers(graph))


def test_every_rows_view_and_constant_is_found() -> None:
    plain, stamped = _plans([_readers_spec()])
    rows = _row_ids(stamped.graph)
    assert stamped.graph.stamped == LAYERS - 1 and len(rows) == 7 * (LAYERS - 1)
    views, constants = stamped.tensors.views, stamped.tensors.constants
    assert list(views) == list(plain.tensors.views) and len(views) == LAYERS
    assert sum(v in rows for v in views) == LAYERS - 1  # every row's unsqueeze
    for name, view in views.items():
        assert view.shape == (1, 8) and bits_equal(view, plain.tensors.views[name])
    assert list(constants) == list(plain.tensors.constants)
    assert sum(c in rows for c in constants) == LAYERS - 1  # every row's c * 3.0
    assert all(bits_equal(constants[c], torch.full([8], 6.0)) for c in constants if c in rows)
    assert _differences(plain, stamped) == []


def test_canary_the_view_rule_planted_away_loses_the_rows_views(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(storage, "_has_view", lambda *args: False)
    plain, stamped = _plans([_readers_spec()])
    rows = _row_ids(stamped.graph)
    assert len(stamped.tensors.views) == 1 and not set(stamped.tensors.views) & rows
    assert "printed pass" in _differences(plain, stamped)  # the rows' views, lowered otherwise


def test_canary_the_constant_rule_planted_away_loses_the_rows_constants(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(planner, "_no_constant_rows",  # every closed table's rows left out
                        lambda graph, deps: layers.closed_layers(graph))
    plain, stamped = _plans([_readers_spec()])
    rows = _row_ids(stamped.graph)
    assert len(plain.tensors.constants) == LAYERS + 1  # the shared full, each layer's c * 3.0
    assert list(stamped.tensors.constants) == list(plain.tensors.constants)[:2]
    assert not set(stamped.tensors.constants) & rows


class _Counting(dict):
    """``Graph.nodes`` counting the lookups of ``rows``' nodes."""

    rows: set[str] = set()
    hits = 0

    def __getitem__(self, key: str) -> Any:
        _Counting.hits += key in self.rows
        return dict.__getitem__(self, key)

    def get(self, key: str, default: Any = None) -> Any:
        _Counting.hits += key in self.rows
        return dict.get(self, key, default)

    def __contains__(self, key: object) -> bool:
        _Counting.hits += key in self.rows
        return dict.__contains__(self, key)


@pytest.mark.parametrize("specs", [[scaling_spec()], [_readers_spec()]],
                         ids=["scaling", "views+constants"])
def test_the_moved_readers_look_up_no_row_node(specs: list[Spec]) -> None:
    """Columns and views on a built graph, ``Graph.nodes`` counting row lookups (the
    constants sweep: ``readers41/row_readers.py``); their answers equal a per-node
    evaluation's."""
    model = _model()
    graph = build_graph(model, match_specs(model, specs))
    with torch.no_grad():
        want = CompileValues(graph).run()
    rows = _row_ids(graph)
    assert len(rows) >= 7 * (LAYERS - 1)
    graph.ir.nodes = _Counting(graph.ir.nodes)
    _Counting.rows, _Counting.hits = rows, 0
    interp = CompileValues(graph)
    with torch.no_grad():
        done = columns.evaluate_columns(graph, interp.env, interp.source_at)
    # 1.0 / scale, scale * weight; none of the other spec (its ops read unevaluated values)
    assert done == (2 if specs[0].name == "scaling" else 0)
    assert _Counting.hits == 0
    for node_id, value in interp.env.items():
        assert bits_equal(value, want[node_id]), node_id
    graph.source_deps()  # sweeps every node: not one of the moved readers (cached)
    bound = {n: want[n] for n in graph.sources()}
    _Counting.hits = 0
    views = storage.BoundViews(graph, bound).views()
    hits_views = _Counting.hits
    assert list(views) == [n for n in graph.ordered() if graph.nodes[n].op == "unsqueeze"]
    assert (hits_views == 0) is (specs[0].name == "scaling")  # a view template's rows: swept


@pytest.mark.parametrize("first", [True, False], ids=["reader-first", "reader-after"])
@pytest.mark.parametrize("read", ["derived", "source", "cse"])
def test_an_open_row_is_left_to_the_per_node_evaluation(
        read: str, first: bool, monkeypatch: pytest.MonkeyPatch) -> None:
    """A spec reading layer 2 opens its row: the columns take the other rows only, and every
    value equals the per-node evaluation's, bit for bit."""
    model = _open_model()
    graph = build_graph(model, match_specs(model, _specs(read, first)()))
    table = graph.stamps[0]
    open_row = next(row for row in table.rows if row[0] == "layers.2.inv")
    closed = layers.closed_layers(graph)[0].rows
    assert open_row not in closed and len(closed) == len(table.rows) - 1
    with torch.no_grad():
        want = CompileValues(graph).run()
        interp = CompileValues(graph)
        monkeypatch.setattr(columns, "MIN_COLUMN", 2)  # 4 closed rows of 5 layers
        done = columns.evaluate_columns(graph, interp.env, interp.source_at)
        ops = [n for n in open_row if graph.nodes[n].kind.value == "op"]
        assert done == 2 and ops and not set(ops) & interp.env.keys()
        assert all(n in interp.env for row in closed for n in row
                   if graph.nodes[n].kind.value == "op")
        got = interp.run()
    assert got.keys() == want.keys()
    assert all(bits_equal(got[k], want[k]) for k in want)
