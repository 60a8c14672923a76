"""A stamped row is *open* when a graph call from outside it names one of its nodes
(:attr:`DerivedGraph.touched <derivgraph.compiler.graph.DerivedGraph.touched>`): recorded when
the call is made, before or after the row's replay, instead of counting every row node's users
once the graph exists. :func:`derivgraph.compiler.layers.closed_layers` keeps no open row.

Each case is a spec on the stack reading layer 2 (its derived tensor, its source, its op
through CSE), resolved after the layers' replays and before them: layer 2's row is open, the
others closed, and the plan is the unstamped one. The open rows are the rows with a user
outside them (the users' count, the rule this replaces, as the oracle). Canaries: with the
rule planted away layer 2 is taken as closed and the compile fails; with the outside calls'
record planted away the replay's own record (the node it found and did not make) still opens
the row when the reader comes first.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
import torch
from torch import nn

from derivgraph import DerivedTensor, Spec, Target, compile_plan
from derivgraph.compiler import instances, layers
from derivgraph.compiler.graph import DerivedGraph
from derivgraph.compiler.stamp import stamping
from derivgraph.errors import SpecValidationError
from derivgraph.tools.bench_scaling import scaling_model, scaling_spec
from tests.compiler.test_order_blocks import chain_specs
from tests.compiler.test_stamp import _check_equivalent

LAYERS = 5

#: a formula on the stack reading layer 2: its derived tensor (held by the engine, so the path
#: exists), its source, its op (the same ``1.0 / scale`` as its ``inv``: a CSE hit)
READS = {"derived": "layers[2].inv * 2.0", "source": "layers[2].scale * 3.0",
         "cse": "1.0 / layers[2].scale"}


def _model() -> nn.Module:
    torch.manual_seed(0)
    model = scaling_model(LAYERS)
    for layer in model.layers:  # the engine holds inv: a path another spec may read
        layer.inv = 1.0 / layer.scale
    return model


def _specs(read: str, first: bool) -> Callable[[], list[Spec]]:
    reader = Spec(name="reader", target=Target(module_class=["ScalingStack"]),
                  derived=[DerivedTensor(name="r", kind="attribute", formula=READS[read])])
    return lambda: [reader, scaling_spec()] if first else [scaling_spec(), reader]


def _closed_rows(graph: DerivedGraph) -> list[str]:
    return [row[0] for table in layers.closed_layers(graph) for row in table.rows]


def _outside_users(graph: DerivedGraph, row: tuple[str, ...]) -> bool:
    """The oracle: whether a node outside ``row`` reads one of its nodes."""
    own = set(row)
    return any(u not in own for n in row for u in graph.ir.users[n])


@pytest.mark.parametrize("first", [False, True], ids=["after", "before"])
@pytest.mark.parametrize("read", sorted(READS))
def test_a_row_another_spec_reads_is_open_and_the_plan_is_the_unstamped_one(
        read: str, first: bool) -> None:
    plan = _check_equivalent(_model, _specs(read, first))
    graph = plan.graph
    assert graph.stamped == LAYERS - 1
    assert _closed_rows(graph) == ["layers.1.inv", "layers.3.inv", "layers.4.inv"]
    [table] = graph.stamps
    assert layers.open_rows(graph.touched, table) == [False, True, False, False]
    assert [_outside_users(graph, row) for row in table.rows] == [False, True, False, False]
    target = {"derived": "layers.2.inv", "source": "layers.2.scale"}.get(read)
    if target is None:  # the CSE hit: the reader's input is layer 2's div, not layer 0's
        target = graph.derived["r"].input
        assert target == table.column(5)[1] and graph.nodes[target].op == "div"
    assert target in graph.touched


@pytest.mark.parametrize("read", sorted(READS))
def test_canary_an_open_row_taken_as_closed(monkeypatch: pytest.MonkeyPatch,
                                            read: str) -> None:
    """Planted: no row is opened. Layer 2's nodes are inferred from the template while the
    reader's tensor reads one of them before it has a value."""
    monkeypatch.setattr(layers, "open_rows", lambda touched, table: [False] * len(table))
    if read == "cse":  # its op made before it: the record's ids are not its replay's
        with stamping(True), pytest.raises(SpecValidationError, match="DG013.*the stamped "
                                           "row of layers.2 records %1:div"):
            compile_plan(_model(), _specs(read, False)())
        return
    with stamping(True), pytest.raises(KeyError):
        compile_plan(_model(), _specs(read, False)())


def _untouched_calls(monkeypatch: pytest.MonkeyPatch) -> None:
    """Planted: the outside calls record nothing (only the replays' own record is left)."""
    def source(self: DerivedGraph, path: str, tensor: Any, layout: Any = None) -> Any:
        from derivgraph.compiler.graph import NodeRef

        self.place_source(path, tensor, layout)
        return NodeRef(path)

    def op(self: DerivedGraph, name: str, args: Any, kwargs: Any) -> Any:
        from derivgraph.compiler.graph import NodeRef, freeze, refs_in

        return NodeRef(self.op_keyed(name, args, kwargs, (name, freeze(args), freeze(kwargs)),
                                     refs_in(args) + refs_in(kwargs)))

    monkeypatch.setattr(DerivedGraph, "source", source)
    monkeypatch.setattr(DerivedGraph, "op", op)
    monkeypatch.setattr(DerivedGraph, "set_input", DerivedGraph.place_input)


@pytest.mark.parametrize("read", ["source", "cse"])
def test_the_replay_opens_a_row_whose_node_was_made_before_it(
        monkeypatch: pytest.MonkeyPatch, read: str) -> None:
    """The reader resolved first made layer 2's source (and its div): the replay finds
    them made and opens its own row, with the outside calls recording nothing."""
    _untouched_calls(monkeypatch)
    with stamping(True):
        graph = compile_plan(_model(), _specs(read, True)()).graph
    [table] = graph.stamps
    found = {"source": {"layers.2.scale"}, "cse": {"layers.2.scale", table.column(5)[1]}}
    assert graph.touched == found[read]
    assert _closed_rows(graph) == ["layers.1.inv", "layers.3.inv", "layers.4.inv"]


def test_canary_a_replay_that_records_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    """Planted: the replay's record is dropped too; the row whose source the reader made
    first is taken as closed and the compile fails."""
    _untouched_calls(monkeypatch)
    monkeypatch.setattr(DerivedGraph, "place_source",
                        lambda self, path, tensor, layout=None, lazy=None:
                        _place_quietly(self, path, tensor, layout))
    with stamping(True), pytest.raises(KeyError):
        compile_plan(_model(), _specs("source", True)())


def _place_quietly(graph: DerivedGraph, path: str, tensor: Any, layout: Any) -> bool:
    """``place_source`` that reports every path as new (makes it only when it is)."""
    from derivgraph.compiler.ir import Node, NodeKind

    if path not in graph.derived and path not in graph.ir.nodes:
        graph.ir.add(Node(path, NodeKind.SOURCE, shape=tuple(tensor.shape),
                          stride=tuple(tensor.stride()), dtype=tensor.dtype,
                          device=tensor.device))
        graph.read_sources[path] = tensor
    return False


def test_scaling_touches_no_row_and_chained_rows_open_only_the_read_one() -> None:
    """Stamped scaling: nothing outside a row names its nodes (every row closed). Rows whose
    derived tensors read each other name them by name (their own: no row opened), and the
    row whose source another spec reads is the one open row."""
    with stamping(True):
        graph = compile_plan(scaling_model(6), [scaling_spec()]).graph
    [table] = graph.stamps
    assert not graph.touched & set(table.ids())
    assert _closed_rows(graph) == [f"layers.{i}.inv" for i in range(1, 6)]
    chain, reader = chain_specs()
    with stamping(True):
        graph = compile_plan(scaling_model(5), [chain, reader]).graph
    [table] = graph.stamps
    assert layers.open_rows(graph.touched, table) == [False, True, False, False]
    assert [_outside_users(graph, row) for row in table.rows] == [False, True, False, False]
    assert [row[0] for row in layers.closed_layers(graph)[0].rows] == \
        ["layers.1.b", "layers.3.b", "layers.4.b"]


@pytest.mark.parametrize("workload", ["reference", "deepseek"])
def test_the_open_rows_are_the_rows_with_an_outside_user(workload: str) -> None:
    """On the bench's workloads (8 layers), every aligned row of every table is open exactly
    when a node outside it reads one of its nodes (the users' count, the rule this replaces)."""
    from derivgraph.tools.bench import _workload

    model, specs, *_ = _workload("cpu", workload, 8, None)
    with stamping(True):
        graph = compile_plan(model, specs).graph
    assert graph.stamped >= 7
    checked = 0
    for table in graph.stamps:
        aligned = instances.aligned_rows(graph.nodes, table)
        opened = layers.open_rows(graph.touched, table)
        outside = [_outside_users(graph, row) for row in table.rows]
        assert [o for o, a in zip(opened, aligned) if a] == \
            [u for u, a in zip(outside, aligned) if a]
        checked += sum(aligned)
    assert checked >= 7
