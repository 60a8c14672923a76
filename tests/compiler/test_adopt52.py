"""adopt52: the middle phases' column sweeps (evaluation's derived sweep, a column's source
operands, adoption's decided rows, the transaction's module records) give exactly what the
per-row code gave."""

from __future__ import annotations

from typing import Any

import pytest
import torch
from torch import nn

from derivgraph import DerivedTensor, Spec, Target
from derivgraph.compiler import columns, transaction
from derivgraph.compiler.owners import PathReader
from derivgraph.compiler.stamp import stamping
from derivgraph.compiler.transaction import ModelTransaction, on_the_way
from derivgraph.tools.bench_scaling import scaling_model, scaling_spec
from tests.compiler.test_lower44 import _model


def _spec_with_generic_rows() -> Spec:
    """The scaling spec plus derived tensors the columns leave to the per-row paths (an alias
    of a derived tensor, a formula over it): rows decided one by one between column rows."""
    base = scaling_spec()
    return Spec(name="scaling", target=Target(module_class=["ScalingLayer"]),
                params=base.params,
                derived=[*base.derived,
                         DerivedTensor(name="inv_alias", kind="alias", of="inv"),
                         DerivedTensor(name="twice", kind="attribute", formula="inv * 2.0")])


def _per_node_env(graph: Any, sources: dict[str, Any] | None) -> dict[str, Any]:
    """Every node's value by the per-node sweep alone (the reference: no column, no early
    derived sweep)."""
    from derivgraph.compiler.interpret import Interpreter
    from derivgraph.planner import CompileValues

    interp = CompileValues(graph, sources)
    with torch.no_grad():
        Interpreter.run(interp)
    return interp.env


@pytest.mark.parametrize("layers", [12, 3])  # columns evaluated (>= MIN_COLUMN) or not
def test_evaluation_gives_every_node_the_per_node_value(layers: int) -> None:
    from derivgraph.planner import _evaluate_all, _prepare

    model = scaling_model(layers)
    with stamping(True):
        plan, _, _, _ = _prepare(model, [_spec_with_generic_rows()], False, True)
    graph = plan.graph
    got = _evaluate_all(graph)
    want = _per_node_env(graph, None)
    assert got.keys() == want.keys() == set(graph.nodes)
    for node_id, value in want.items():
        mine = got[node_id]
        if node_id in graph.derived and graph.derived[node_id].input is not None:
            assert mine is got[graph.derived[node_id].input]  # the input's own object
        assert torch.equal(mine, value) if isinstance(value, torch.Tensor) else mine == value


def test_an_op_that_raises_is_named_after_the_early_derived_sweep() -> None:
    from derivgraph.errors import SpecValidationError
    from derivgraph.planner import _evaluate_all, _prepare

    model = scaling_model(12)
    with stamping(True):
        plan, _, _, _ = _prepare(model, [_spec_with_generic_rows()], False, True)
    graph = plan.graph
    order = graph.ordered()
    bad = next(n for n in order if n.endswith(".twice"))  # its input's op raises
    op = graph.derived[bad].input
    node = graph.nodes[op]
    saved = node.op
    node.op = "nonexistent_op_adopt52"
    try:
        with pytest.raises(SpecValidationError) as info:
            _evaluate_all(graph)
    finally:
        node.op = saved
    assert [i.node for i in info.value.issues] == [bad]  # the first row in order, named


def test_a_columns_operands_are_read_as_a_sweep_of_its_refs() -> None:
    a, b = torch.ones(2), torch.zeros(2)
    reads: list[str] = []

    def read(ref: str) -> Any:
        reads.append(ref)
        return {"x": a, "y": b, "n": 3}[ref]

    env: dict[str, Any] = {"x": a}
    assert columns._operands(env, read, ["x", "y", "y", "x"], True) == [a, b, b, a]
    assert reads == ["y"] and env["y"] is b  # read once, kept
    reads.clear()
    env = {"x": a}
    assert columns._operands(env, read, ["y", "n", "x", "y"], True) is None
    assert reads == ["y", "n"]  # up to the first that is no tensor, in order
    assert columns._operands({"x": a}, read, ["x", "z"], False) is None  # not evaluated yet
    assert columns._operands({"x": a, "z": 1}, read, ["z", "x"], False) is None


def test_adoption_plans_every_row_in_graph_order() -> None:
    from derivgraph.planner import _prepare

    model = scaling_model(12)
    with stamping(True):
        plan, values, planned, _ = _prepare(model, [_spec_with_generic_rows()], False, True)
    graph = plan.graph
    assert [e.node.id for e, _ in planned] == \
        [n for n in graph.ordered() if n in graph.derived]
    with stamping(False):
        _, _, plain, _ = _prepare(scaling_model(12), [_spec_with_generic_rows()], False, True)
    mine = {e.node.id: (e.slot, e.adopted, type(x).__name__, getattr(x, "target", None))
            for e, x in planned}
    assert mine == {e.node.id: (e.slot, e.adopted, type(x).__name__, getattr(x, "target", None))
                    for e, x in plain}
    assert any(isinstance(x, nn.Module) is False and type(x).__name__ == "AliasOf"
               and x.target.endswith(".inv") for _, x in planned)  # generic rows were there


def _records_one_by_one(objs: list[Any]) -> list[tuple[int, dict[str, Any]]]:
    """The transaction's rule object by object: its ``__dict__``, then each registry."""
    out = []
    for obj in objs:
        d = obj.__dict__
        out.append((id(d), dict(d)))
        out += [(id(d[r]), dict(d[r])) for r in transaction._REGISTRIES if r in d]
    return out


def test_a_transaction_records_modules_as_one_by_one() -> None:
    model = _model()
    paths = ["layers.0", "layers.2", "head.inner", "head", "layers.0"]
    objs = on_the_way(PathReader(model), paths)
    swept = transaction._module_dicts(objs)
    assert swept is not None
    assert [(id(live), saved) for live, saved in swept] == _records_one_by_one(objs)
    tx = ModelTransaction(model, paths, [])
    assert [(id(live), saved) for live, saved in tx._dicts] == _records_one_by_one(objs)
    model.layers[2].added = nn.Linear(1, 1)
    model.head.inner.nothing = 5
    tx.rollback()
    assert "added" not in model.layers[2]._modules and model.head.inner.nothing is None


def test_a_transaction_over_an_object_not_a_module_records_it_one_by_one() -> None:
    model = _model()
    holder = type("Holder", (), {})()
    holder.inner = nn.Module()
    model.head.box = holder  # a plain object on the way: no registries to record
    assert transaction._module_dicts([model, holder]) is None
    tx = ModelTransaction(model, ["head.box.inner"], [])
    objs = [model, model.head, holder, holder.inner]
    want = []
    for obj in objs:
        d = obj.__dict__
        want.append((id(d), dict(d)))
        if isinstance(obj, nn.Module):
            want += [(id(d[r]), dict(d[r])) for r in transaction._REGISTRIES if r in d]
    assert [(id(live), saved) for live, saved in tx._dicts] == want
    holder.inner = None
    tx.rollback()
    assert isinstance(holder.inner, nn.Module)
