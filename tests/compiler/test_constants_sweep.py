"""``planner._lower``'s constants (op nodes no source feeds, with a tensor value): the rows of
closed stamped tables whose template has no source-free op are left out of the sweep, cut from
the topological order at its spans (``layers.order_without_rows``), and the nodes left are
swept in the graph's node order.

The answer (keys in order, the very value objects) equals the reference sweep: every node in
the graph's order but those rows' (a set of every row's id, ``layers.layer_nodes``), on
stamped and plain compiles, including a spec whose constants come in the topological order
the other way round from the nodes' order (a derived tensor reading one declared after it).
"""

from __future__ import annotations

import operator
from itertools import compress
from typing import Any

import pytest
import torch

from derivgraph import DerivedTensor, Spec, Target, planner
from derivgraph.compiler import layers
from derivgraph.compiler.ir import NodeKind
from derivgraph.compiler.stamp import stamping
from derivgraph.tools.bench_scaling import scaling_model, scaling_spec


def _later_spec() -> Spec:
    """``a`` reads ``b`` (declared after it): ``a``'s constant is made first, ``b``'s comes
    first in the topological order."""
    return Spec(name="later", target=Target(module_class=["ScalingLayer"]),
                params={"E": "scale.shape[0]"}, derived=[
                    DerivedTensor(name="a", kind="attribute", formula="b * full([E], 5.0)"),
                    DerivedTensor(name="b", kind="attribute", formula="full([E], 3.0) * weight")])


def _reference(plan: Any, values: dict[str, Any]) -> dict[str, Any]:
    """The constants by the reference sweep: every node but the left-out rows' (one set of
    their ids), in the nodes' order."""
    graph = plan.graph
    deps, nodes = graph.source_deps(), graph.nodes
    skip = layers.layer_nodes([t for t in layers.closed_layers(graph) if all(
        nodes[n].kind is not NodeKind.OP or deps[n] for n in t.template)])
    rest = compress(nodes, map(operator.not_, map(skip.__contains__, nodes)))
    return {n: values[n] for n in rest if nodes[n].kind is NodeKind.OP and not deps[n]
            and isinstance(values.get(n), torch.Tensor)}


def _compile(monkeypatch: pytest.MonkeyPatch, model: Any, specs: list[Spec],
             stamped: bool) -> tuple[Any, dict[str, Any], bool]:
    """The plan, its reference constants, and whether the sweep left rows out."""
    seen: dict[str, Any] = {}
    real = planner._lower

    def spy(plan: Any, values: dict[str, Any], *args: Any, **kwargs: Any) -> None:
        real(plan, values, *args, **kwargs)
        seen["reference"] = _reference(plan, values)
        seen["skipped"] = bool(planner._no_constant_rows(plan.graph, plan.graph.source_deps()))

    monkeypatch.setattr(planner, "_lower", spy)
    with stamping(stamped):
        plan = planner.compile_plan(model, specs)
    return plan, seen["reference"], seen["skipped"]


#: the specs, and whether a stamped compile of them leaves rows out of the sweep
CASES = {
    "scaling": (lambda: [scaling_spec()], True),
    "later": (lambda: [_later_spec()], True),
    "both": (lambda: [scaling_spec(), _later_spec()], False),  # a template with a free op
}


@pytest.mark.parametrize("stamped", [True, False], ids=["stamped", "plain"])
@pytest.mark.parametrize("case", sorted(CASES))
def test_the_constants_are_the_reference_sweeps(monkeypatch: pytest.MonkeyPatch, case: str,
                                                stamped: bool) -> None:
    torch.manual_seed(0)
    specs, cut = CASES[case]
    plan, reference, skipped = _compile(monkeypatch, scaling_model(6), specs(), stamped)
    constants = plan.tensors.constants
    assert skipped is (stamped and cut)  # where rows are left out, the cut is exercised
    assert list(constants) == list(reference) and constants
    assert all(map(operator.is_, constants.values(), reference.values()))


def test_the_constants_come_in_the_nodes_order_not_the_topological_one(
        monkeypatch: pytest.MonkeyPatch) -> None:
    plan, reference, _ = _compile(monkeypatch, scaling_model(6), [_later_spec()], True)
    graph = plan.graph
    constants = list(plan.tensors.constants)
    in_order = [n for n in graph.ordered() if n in plan.tensors.constants]
    assert len(constants) == 2 and in_order == constants[::-1]  # the case this test is for
    assert constants == list(reference)
