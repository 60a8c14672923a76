"""A run of stamped rows replayed by columns (``Stamper._replay_run``,
:meth:`~derivgraph.compiler.replay.Replay.run_rows`) must leave exactly what replaying its rows
one by one leaves: the IR's nodes (every field) and users in order, the version, the op
numbering and op names, the CSE table in order, the CSE hits, the twins, what is touched, the
sources read in order, the derived tensors' inputs and the instance tables' rows and records.
A run whose replay would name a node already made (a source another spec read first) is
replayed row by row. Canary: a column replay blind to nodes already made changes the graph
(and, planted once each by hand, users lists in the wrong order or with a node twice are
caught by the ``one-spec`` / ``ops-over-ops`` cases); a derived tensor placed by column named
first in its value's users is caught."""

from __future__ import annotations

from typing import Any

import pytest

from derivgraph import DerivedTensor, Spec, Target
from derivgraph.compiler import build, stamp
from derivgraph.compiler import graph as graph_module
from derivgraph.compiler.bind import match_specs
from derivgraph.compiler.replay import Twins
from derivgraph.tools.bench_scaling import scaling_model, scaling_spec


def _record(graph: Any) -> list[Any]:
    """Everything a stamped replay leaves in ``graph``, in order."""
    ir = graph.ir
    nodes = [(n.id, n.kind, n.op, n.args, n.kwargs, n.inputs, n.shape, n.stride, n.dtype,
              n.device) for n in ir.nodes.values()]
    derived = [(n.id, n.input) for n in graph.derived.values()]
    tables = [(t.template, t.rows, t.prefixes, t.starts, t.base, t.layouts, t.layouts_hold)
              for t in graph.stamps]
    sources = [(path, id(tensor)) for path, tensor in graph.read_sources.items()]
    return [nodes, list(ir.users.items()), ir.version, list(graph._cse.items()),
            graph.op_count(), sorted(graph.op_names), graph.cse_hits, sorted(graph.touched),
            sources, derived, tables, graph.stamped,
            [(i.rule, i.message, i.node) for i in graph.issues]]


def _built(model: Any, specs: list[Any], columns: bool,
           monkeypatch: pytest.MonkeyPatch) -> tuple[list[Any], list[bool], dict[str, str]]:
    """The record of ``build_graph``, with runs replayed by columns where they may be
    (``columns``) or row by row; what each column attempt gave; the twins."""
    tried: list[bool] = []
    twins: dict[str, str] = {}
    by_columns = stamp.Stamper._replay_run
    made = stamp.Stamper.__init__

    def counted(self: Any, *args: Any) -> bool:
        done = columns and by_columns(self, *args)
        tried.append(done)
        return done

    def kept(self: Any, *args: Any) -> None:
        made(self, *args)
        nonlocal twins
        twins = self.twins

    with monkeypatch.context() as patch:
        patch.setattr(stamp.Stamper, "_replay_run", counted)
        patch.setattr(stamp.Stamper, "__init__", kept)
        graph = build.build_graph(model, match_specs(model, specs))
    if isinstance(twins, Twins):
        twins.settle()  # a column run's are held until looked up: every pair, in order
    return _record(graph), tried, dict(twins)


def _peek_spec() -> Spec:
    """A spec on the stack (matched before its layers) reading layer 3's ``scale``: that
    source is a node before the layers' run is replayed."""
    return Spec(name="peek", target=Target(module_class=["ScalingStack"]),
                derived=[DerivedTensor(name="peek", kind="attribute",
                                       formula="2.0 * layers[3].scale")])


def _chain_spec() -> Spec:
    """Ops over ops and a source read twice by one op: each node's users (built per column
    from the template) are several ops, in step order, each once."""
    return Spec(name="chain", target=Target(module_class=["ScalingLayer"]),
                params={"E": "scale.shape[0]"},
                derived=[DerivedTensor(name="a", kind="attribute",
                                       formula="(scale + weight) * scale"),
                         DerivedTensor(name="b", kind="attribute", formula="scale * scale"),
                         DerivedTensor(name="c", kind="attribute",
                                       formula="weight - scale")])


def _inputs_spec() -> Spec:
    """Derived tensors whose inputs are the layer's sources, two on one source, and an op:
    each value's users are its ops, then its derived tensors in their order (set by
    column, :meth:`~derivgraph.compiler.ir.Graph.set_fresh_inputs`)."""
    return Spec(name="inputs", target=Target(module_class=["ScalingLayer"]),
                params={"E": "scale.shape[0]"},
                derived=[DerivedTensor(name="s", kind="alias", of="scale"),
                         DerivedTensor(name="a", kind="attribute", formula="scale * weight"),
                         DerivedTensor(name="t", kind="alias", of="scale"),
                         DerivedTensor(name="w", kind="alias", of="weight")])


@pytest.mark.parametrize("specs, by_columns", [
    (lambda: [scaling_spec()], True),
    (lambda: [_chain_spec()], True),
    (lambda: [_inputs_spec()], True),
    (lambda: [_peek_spec(), scaling_spec()], False),
    (lambda: [scaling_spec(), _peek_spec()], False),
], ids=["one-spec", "ops-over-ops", "derived-inputs", "a-source-made-first",
        "a-source-made-first-2"])
def test_a_run_replayed_by_columns_is_what_rows_leave(
        specs: Any, by_columns: bool, monkeypatch: pytest.MonkeyPatch) -> None:
    model = scaling_model(12)
    columns, tried, twins = _built(model, specs(), True, monkeypatch)
    rows, _, row_twins = _built(model, specs(), False, monkeypatch)
    assert tried == [by_columns]  # one run (layers 1-11), replayed by columns or not
    assert columns == rows
    assert columns[-1] == []  # no issue: every spec resolved
    assert list(twins.items()) == list(row_twins.items())
    assert columns[11] == 11  # every later layer stamped either way


def test_a_run_with_a_node_named_before_it_is_touched_as_today(
        monkeypatch: pytest.MonkeyPatch) -> None:
    record, tried, _ = _built(scaling_model(6), [_peek_spec(), scaling_spec()], True,
                              monkeypatch)
    assert tried == [False]
    assert "layers.3.scale" in record[7]  # touched: named by layer 3's row, made before it


def test_canary_a_column_replay_blind_to_made_nodes_is_caught(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Planted bug: the column replay takes every node as new (the source another spec made
    first is made again, and not touched)."""
    model = scaling_model(6)
    rows, _, _ = _built(model, [_peek_spec(), scaling_spec()], False, monkeypatch)
    monkeypatch.setattr(graph_module.DerivedGraph, "is_fresh", lambda self, ids, fresh=None: True)
    planted, tried, _ = _built(model, [_peek_spec(), scaling_spec()], True, monkeypatch)
    assert tried == [True]
    assert planted != rows  # the planted bug shows


@pytest.mark.parametrize("specs", [lambda: [scaling_spec()], lambda: [_inputs_spec()]],
                         ids=["one-spec", "derived-inputs"])
def test_canary_derived_inputs_named_before_the_ops_in_users_are_caught(
        specs: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """Planted bug: a column-placed derived tensor named first in its value's users (the
    row replay names it after the layer's ops that read it)."""
    from derivgraph.compiler import ir

    model = scaling_model(6)
    rows, _, _ = _built(model, specs(), False, monkeypatch)
    real = ir.Graph.set_fresh_inputs

    def first(self: Any, ids: list[str], values: list[str]) -> None:
        real(self, ids, values)
        for node_id, value in zip(ids, values):
            users = self.users[value]
            users.remove(node_id)
            users.insert(0, node_id)

    monkeypatch.setattr(ir.Graph, "set_fresh_inputs", first)
    planted, tried, _ = _built(model, specs(), True, monkeypatch)
    assert tried == [True]
    assert planted != rows  # the planted bug shows
