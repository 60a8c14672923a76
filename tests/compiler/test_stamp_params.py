"""Params stamped from a template: a layer whose param reads give other facts resolves its own.

The layers of :class:`tests.compiler.test_stamp.Stack` read ``E = scale.shape[0]``; a layer with
another ``scale`` size must get its own ``E`` (and so its own ``ks = full([E], k)``). The
canary plants a params matcher that ignores the facts: the second layer then takes the first
layer's ``E`` and the plan differs from the one compiled without stamping.
"""

from __future__ import annotations

import pytest
import torch

from derivgraph import DerivedTensor, Spec, Target, compile_plan
from derivgraph.compiler import stamp_params
from derivgraph.compiler.stamp import stamping
from derivgraph.tools.bench_scaling import scaling_model, scaling_spec
from tests.compiler.test_stamp import Stack, _check_equivalent, _differences, _layer_spec


def _scaling(layers: int) -> torch.nn.Module:
    torch.manual_seed(0)
    return scaling_model(layers)


def test_params_of_identical_layers_come_from_the_template() -> None:
    plan = _check_equivalent(lambda: _scaling(5), lambda: [scaling_spec()])
    assert plan.graph.params_stamped == 4
    assert all(plan.entries[f"layers.{i}.strides"].storage.tolist() == [7] * 8
               for i in range(5))


def test_a_layer_whose_param_reads_differ_resolves_its_own_params() -> None:
    plan = _check_equivalent(lambda: Stack([{}, {"n": 6}, {}]), lambda: [_layer_spec()])
    assert plan.graph.params_stamped == 1  # layer 2 from layer 0; layer 1 is 6 wide
    assert plan.entries["layers.1.ks"].storage.tolist() == [7] * 6
    assert plan.entries["layers.2.ks"].storage.tolist() == [7] * 8


def test_canary_a_params_matcher_that_ignores_facts_is_caught(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(stamp_params, "_param_matches", lambda graph, reads, bound: True)
    with stamping(False):
        plain = compile_plan(Stack([{}, {"n": 6}]), [_layer_spec()])
    stamped = compile_plan(Stack([{}, {"n": 6}]), [_layer_spec()])
    assert stamped.graph.params_stamped == 1
    assert stamped.entries["layers.1.ks"].storage.tolist() == [7] * 8  # the planted bug shows
    assert _differences(plain, stamped) != []


def _tensor_param_spec() -> Spec:
    """A param that is a tensor (an issue), and one read through a config number."""
    return Spec(name="bad", target=Target(module_class=["Layer"]),
                params={"K": "k", "S": "scale"},
                derived=[DerivedTensor(name="ks", kind="attribute",
                                       formula="full([K], 1, dtype=int64)")])


def test_a_layer_whose_params_made_an_issue_is_no_template() -> None:
    from derivgraph.compiler.bind import match_specs
    from derivgraph.compiler.build import build_graph

    model = Stack([{}, {}, {}])
    graph = build_graph(model, match_specs(model, [_tensor_param_spec()]))
    assert graph.params_stamped == 0
    assert len([i for i in graph.issues if "is a tensor" in i.message]) == 3  # each layer's own


def test_config_numbers_read_by_params_are_facts() -> None:
    spec = Spec(name="cfg", target=Target(module_class=["Layer"]), params={"K": "k"},
                derived=[DerivedTensor(name="ks", kind="attribute",
                                       formula="full([K], 1, dtype=int64)")])
    plan = _check_equivalent(lambda: Stack([{}, {"k": 3}, {}]), lambda: [spec])
    assert plan.graph.params_stamped == 1
    assert plan.entries["layers.1.ks"].storage.shape == torch.Size([3])
    assert plan.entries["layers.2.ks"].storage.shape == torch.Size([7])


def _listed() -> Stack:
    model = Stack([{}, {}, {}])
    for layer in model.layers:
        layer.sizes = [8]  # a config list: each layer's own object
    return model


def _list_spec() -> Spec:
    return Spec(name="listed", target=Target(module_class=["Layer"]), params={"S": "sizes"},
                derived=[DerivedTensor(name="ks", kind="attribute",
                                       formula="full(S, 1, dtype=int64)")])


def _params_hold_own_lists() -> bool:
    from derivgraph.compiler.bind import match_specs
    from derivgraph.compiler.build import build_graph

    model = _listed()
    graph = build_graph(model, match_specs(model, [_list_spec()]))
    return all(graph.derived[f"layers.{i}.ks"].params["S"] is model.layers[i].sizes
               for i in range(3))


def test_a_param_holding_a_config_list_is_each_layers_own() -> None:
    plan = _check_equivalent(_listed, lambda: [_list_spec()])
    assert plan.graph.params_stamped == 0
    assert _params_hold_own_lists()


def test_canary_a_shared_config_list_is_caught(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(stamp_params, "_immutable", lambda value: True)
    assert not _params_hold_own_lists()
