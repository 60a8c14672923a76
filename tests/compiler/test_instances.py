"""The instance table: one record per template, a row per stamped layer, a column per position.

On the scaling workload the stamper keeps exactly one :class:`InstanceTable` (no per-layer
record): its template is layer 0's nodes, its rows layers 1.. in order, and every column holds
the template node's counterpart in each layer (the paths, and for op columns the op and its
inputs, asserted by value). A layer planted with another dtype is no row. A row's replay
record (its module path, the op count before it) gives every id of the row
(:func:`~derivgraph.compiler.instances.consistent_rows`, run by :func:`closed_layers`): a row
recorded with two nodes swapped is a DG error, the model rolled back. Canary: with that check
planted to accept every row, the mis-ordered row takes its template's steps at the wrong
positions and the compile refuses the plan (the first pass differs from eager evaluation);
with the row's insertion check planted away too (the row's order and its source sets then
both read by position), the compile still refuses. An order that misses an input among the
nodes no record answers for is a DG error (the source sets' sweep checks it). A table with no
record is proven node by node (:func:`aligned_rows`): the mis-ordered row is dropped and its
layer compiled on its own.
"""

from __future__ import annotations

from typing import Any

import pytest
import torch

from derivgraph import compile_plan
from derivgraph.compiler import instances, layers, stamp
from derivgraph.compiler.instances import InstanceTable, OpSlot, PathSlot, aligned_rows
from derivgraph.compiler.stamp import stamping
from derivgraph.errors import SpecValidationError
from derivgraph.tools.bench_scaling import scaling_spec
from tests.compiler.test_stamp import _differences
from tests.compiler.test_stamp_reload import LAYERS, PLANTED, _expected, _model

#: the positions of layer 0's nodes: derived (inv, prod, strides, scale_alias), then what its
#: calls made (scale, the div, weight, the mul)
_PATHS = {0: "inv", 1: "prod", 2: "strides", 3: "scale_alias", 4: "scale", 6: "weight"}


def _compiled(plant: dict[str, Any] | None = None) -> Any:
    with stamping(True):
        return compile_plan(_model(plant), [scaling_spec()])


def test_one_table_whose_columns_are_each_layers_nodes() -> None:
    plan = _compiled()
    graph = plan.graph
    [table] = graph.stamps
    assert graph.stamped == LAYERS - 1 == len(table)
    assert table.template[:4] == tuple(f"layers.0.{n}" for n in ("inv", "prod", "strides",
                                                                "scale_alias"))
    for k, name in _PATHS.items():
        assert table.template[k] == f"layers.0.{name}"
        assert table.column(k) == [f"layers.{i}.{name}" for i in range(1, LAYERS)]
    nodes = graph.nodes
    for i, (div, mul) in enumerate(zip(table.column(5), table.column(7)), start=1):
        assert (nodes[div].op, nodes[div].inputs) == ("div", (f"layers.{i}.scale",))
        assert (nodes[mul].op, nodes[mul].inputs) == \
            ("mul", (f"layers.{i}.scale", f"layers.{i}.weight"))
        assert graph.derived[f"layers.{i}.inv"].input == div
    assert aligned_rows(nodes, table) == [True] * (LAYERS - 1)
    [closed] = layers.closed_layers(graph)
    assert closed is table  # every row proven: the table itself, no copy
    assert table.node_map()["layers.7.prod"] == "layers.0.prod"
    values = _expected(plan.model)  # and the plan computes every layer's own values
    assert all(torch.equal(plan.entries[k].storage, v) for k, v in values.items())


def test_a_planted_layer_is_no_row() -> None:
    [table] = _compiled({"dtype": torch.float64}).graph.stamps
    assert table.column(0) == [f"layers.{i}.inv" for i in range(1, LAYERS) if i != PLANTED]


def _misorder(monkeypatch: pytest.MonkeyPatch, layer: int, record: bool = True) -> None:
    """Plant a stamper bug: layer ``layer``'s row records its ``inv`` and ``prod`` swapped
    (``record=False``: and the table keeps no replay record)."""
    replay = stamp.Stamper._replay

    def planted(self: stamp.Stamper, template: Any, bound: Any, nodes: Any,
                objects: Any) -> None:
        replay(self, template, bound, nodes, objects)
        table = self.tables[template.ids]
        if not record:
            table.base = ""
        if bound.module_path == f"layers.{layer}":
            row = table.rows[-1]
            table.rows[-1] = (row[1], row[0], *row[2:])

    replay_run = stamp.Stamper._replay_run

    def planted_run(self: stamp.Stamper, template: Any, at: int, size: int) -> bool:
        if not replay_run(self, template, at, size):
            return False
        table = self.tables[template.ids]
        where = table.prefixes.index(f"layers.{layer}") \
            if f"layers.{layer}" in table.prefixes else None
        if not record:
            table.base = ""
        if where is not None:  # the same swap in a run replayed by columns
            row = table.rows[where]
            table.rows[where] = (row[1], row[0], *row[2:])
        return True

    monkeypatch.setattr(stamp.Stamper, "_replay", planted)
    monkeypatch.setattr(stamp.Stamper, "_replay_run", planted_run)


def test_a_misordered_row_without_a_record_is_dropped_and_compiled_on_its_own(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """A table with no replay record (``base`` empty) is proven node by node
    (:func:`aligned_rows`): the mis-ordered row is dropped and compiled on its own."""
    with stamping(False):
        plain = compile_plan(_model(), [scaling_spec()])
    _misorder(monkeypatch, 3, record=False)
    plan = _compiled()
    [table] = plan.graph.stamps
    assert table.column(0)[2] == "layers.3.prod"  # the planted row is in the table
    assert aligned_rows(plan.graph.nodes, table) == [i != 3 for i in range(1, LAYERS)]
    [closed] = layers.closed_layers(plan.graph)
    assert closed.column(0) == [f"layers.{i}.inv" for i in range(1, LAYERS) if i != 3]
    assert _differences(plain, plan) == []
    values = _expected(plan.model)
    assert all(torch.equal(plan.entries[k].storage, v) for k, v in values.items())


def test_a_recorded_row_that_is_not_its_replay_is_a_dg_error(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """The record's own consistency: layer 3's row records ``prod`` where its replay made
    ``inv`` (its ids are not the ones its module path and op count give). Every row reader
    trusts the record, so the compile refuses with a DG error naming the row and the node,
    and leaves the model as it was."""
    _misorder(monkeypatch, 3)
    model = _model()
    before = {k: v.clone() for k, v in model.state_dict().items()}
    with stamping(True), pytest.raises(SpecValidationError, match=r"DG013.*the stamped row of "
                                       r"layers\.3 records layers\.3\.prod at the position "
                                       r"of its template's layers\.0\.inv"):
        compile_plan(model, [scaling_spec()])
    assert not any(hasattr(layer, "inv") for layer in model.layers)  # rolled back
    after = model.state_dict()
    assert after.keys() == before.keys()
    assert all(torch.equal(after[k], v) for k, v in before.items())


def test_each_position_of_the_record() -> None:
    """The record gives every id of a row: paths by module path, ops by the op count before
    the row's replay (asserted by value); a row differing at one position is inconsistent
    there only."""
    plan = _compiled()
    [table] = plan.graph.stamps
    derived = plan.graph.derived
    recipe = instances.row_recipe(table, derived)
    # the derived tensors' values: the div, the mul, the shared ``full``, the source scale
    assert recipe == [PathSlot(".inv", value_at=5), PathSlot(".prod", value_at=7),
                      PathSlot(".strides", value_id="%3:full"),
                      PathSlot(".scale_alias", value_at=4), PathSlot(".scale"),
                      OpSlot(1, "div"), PathSlot(".weight"), OpSlot(2, "mul")]
    assert table.prefixes[:2] == ["layers.1", "layers.2"]
    start = table.starts[1]
    assert table.rows[1][5] == f"%{start + 1}:div" and table.rows[1][7] == f"%{start + 2}:mul"
    assert instances.consistent_rows(table, recipe, derived) == [True] * (LAYERS - 1)
    rows = list(table.rows[:3])
    rows[1] = (*rows[1][:5], rows[0][5], *rows[1][6:])  # layer 1's div in layer 2's row
    rows[2] = (*rows[2][:6], "layers.1.weight", rows[2][7])
    planted = InstanceTable(table.template, rows, table.base, table.prefixes[:3],
                            table.starts[:3])
    assert instances.consistent_rows(planted, recipe, derived) == [True, False, False]
    assert instances.row_recipe(InstanceTable(table.template, rows), derived) is None
    derived["layers.2.prod"].input = rows[0][7]  # layer 1's mul as layer 2's value
    assert instances.consistent_rows(table, recipe, derived) == \
        [i != 2 for i in range(1, LAYERS)]


def test_canary_a_misordered_row_taken_as_consistent(monkeypatch: pytest.MonkeyPatch) -> None:
    """Planted bug: the record's check accepts every row. Layer 3's ``prod`` takes the
    template's ``inv`` step, so the first pass writes ``1 / scale`` there and the compile
    refuses."""
    _misorder(monkeypatch, 3)
    monkeypatch.setattr(layers, "consistent_rows",
                        lambda table, recipe, derived, *held: [True] * len(table))
    with pytest.raises(SpecValidationError, match="differs from eager evaluation at "
                                                  "layers.3"):
        _compiled()


def test_canary_a_misordered_row_without_a_record_taken_as_aligned(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Planted bug: with no record, the node proof accepts every row: the compile refuses
    as above."""
    _misorder(monkeypatch, 3, record=False)
    monkeypatch.setattr(layers, "aligned_rows", lambda nodes, table: [True] * len(table))
    with pytest.raises(SpecValidationError, match="differs from eager evaluation at "
                                                  "layers.3"):
        _compiled()


def test_the_proof_names_each_kind_of_misalignment() -> None:
    """A row whose node has another op, reads another layer's node, or names a missing
    node is not aligned; the others are."""
    plan = _compiled()
    nodes, [table] = plan.graph.nodes, plan.graph.stamps
    rows = list(table.rows[:4])
    rows[1] = (*rows[1][:5], table.rows[0][7], *rows[1][6:])  # a mul where the div is
    rows[2] = (*rows[2][:7], table.rows[0][7])  # layer 1's mul: reads layer 1's scale
    rows[3] = (*rows[3][:6], "layers.4.nothing", rows[3][7])
    assert aligned_rows(nodes, InstanceTable(table.template, rows)) == \
        [True, False, False, False]
    assert instances.aligned_rows is aligned_rows


def test_canary_a_misordered_record_taken_as_its_replay_and_in_order(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Planted bugs in both proofs a stamped row's order and its source sets rest on (the
    record's consistency and its insertion order): layer 3's row, recorded with ``inv`` and
    ``prod`` swapped, takes its template's walk and its template's sets by position. The
    compile still refuses (the first pass differs from eager evaluation) and leaves the
    model as it was."""
    _misorder(monkeypatch, 3)
    monkeypatch.setattr(layers, "consistent_rows",
                        lambda table, recipe, derived, *held: [True] * len(table))
    monkeypatch.setattr(layers, "_inserted_in_order", lambda where, rows, lead: rows)
    model = _model()
    before = {k: v.clone() for k, v in model.state_dict().items()}
    with stamping(True), pytest.raises(SpecValidationError, match="differs from eager "
                                       "evaluation at layers.3"):
        compile_plan(model, [scaling_spec()])
    assert not any(hasattr(layer, "inv") for layer in model.layers)  # rolled back
    after = model.state_dict()
    assert after.keys() == before.keys()
    assert all(torch.equal(after[k], v) for k, v in before.items())


@pytest.mark.parametrize("stamped", [False, True])
def test_canary_an_order_that_misses_an_input_is_a_dg_error(stamped: bool) -> None:
    """Planted bug in the order of the nodes no record answers for (every node unstamped;
    stamped: the template's): layer 0's ``prod`` moved first. The source sets' sweep, which
    reads every input before its user, refuses with a DG error naming both nodes (not a
    ``KeyError``)."""
    with stamping(stamped):
        graph = compile_plan(_model(), [scaling_spec()]).graph
    assert bool(layers.closed_layers(graph)) is stamped
    order = graph.ordered()
    graph.ir._order = ["layers.0.prod", *[n for n in order if n != "layers.0.prod"]]
    graph._deps_version = -1
    with pytest.raises(SpecValidationError, match=r"order reaches layers\.0\.prod before "
                                                  r"its input %\d+:mul"):
        graph.source_deps()
