"""Compile-time values of stamped columns (:mod:`derivgraph.compiler.columns`), bit for bit.

On the scaling workload both op columns (``1.0 / scale``, ``scale * weight``) are evaluated as
one call each, and every value equals the per-node evaluation and the hand computation, bit for
bit. A spec mixing exact ops (``sqrt``, ``maximum``, ``- 2.0``) with an inexact one (``exp``)
evaluates only the exact columns; a layer of another dtype is not stamped and not in a column;
the compiled plan equals the plain one. Canary: a column whose values are handed to the wrong
layers makes the compile's bit check refuse the plan.
"""

from __future__ import annotations

from typing import Any

import pytest
import torch
from torch import nn

import derivgraph.compiler.columns as columns
from derivgraph import DerivedTensor, Spec, Target, compile_plan
from derivgraph.compare import bits_equal
from derivgraph.compiler.bind import match_specs
from derivgraph.compiler.build import build_graph
from derivgraph.compiler.stamp import stamping
from derivgraph.errors import SpecValidationError
from derivgraph.planner import CompileValues
from derivgraph.tools.bench_scaling import scaling_model, scaling_spec
from tests.compiler.test_stamp import _differences

LAYERS = 12


def _mixed_spec() -> Spec:
    return Spec(name="mixed", target=Target(module_class=["ScalingLayer"]), derived=[
        DerivedTensor(name="root", kind="attribute", formula="sqrt(scale) - 2.0"),
        DerivedTensor(name="top", kind="attribute", formula="maximum(scale, weight)"),
        DerivedTensor(name="grown", kind="attribute", formula="exp(weight)")])


def _model(planted: bool = False) -> nn.Module:
    torch.manual_seed(0)
    model = scaling_model(LAYERS)
    if planted:  # layer 4 in float64: another template (here: resolved on its own)
        layer = model.layers[4]
        layer.scale = nn.Parameter(layer.scale.detach().double(), requires_grad=False)
        layer.weight = nn.Parameter(layer.weight.detach().double(), requires_grad=False)
    return model


def _values(spec: Spec, planted: bool = False) -> tuple[Any, dict[str, Any], dict[str, Any], int]:
    """(graph, values with columns, values per node, columns evaluated)."""
    model = _model(planted)
    graph = build_graph(model, match_specs(model, [spec]))
    with torch.no_grad():
        interp = CompileValues(graph)
        done = columns.evaluate_columns(graph, interp.env, interp.source_at)
        with_columns = interp.run()
        per_node = CompileValues(graph).run()
    return graph, with_columns, per_node, done


def test_scaling_columns_are_one_call_each_and_bit_exact() -> None:
    graph, got, want, done = _values(scaling_spec())
    assert done == 2 and graph.stamped == LAYERS - 1
    assert got.keys() == want.keys()
    assert all(bits_equal(got[k], want[k]) for k in want)
    model = _model()
    for i, layer in enumerate(model.layers):
        assert bits_equal(got[f"layers.{i}.inv"], 1.0 / layer.scale.detach())
        assert bits_equal(got[f"layers.{i}.prod"], layer.scale.detach() * layer.weight.detach())


@pytest.mark.parametrize("planted", [False, True], ids=["identical", "planted-float64"])
def test_only_exact_columns_of_one_layout_are_taken(planted: bool) -> None:
    graph, got, want, done = _values(_mixed_spec(), planted)
    assert done == 3  # sqrt, sub, maximum; never exp
    assert all(bits_equal(got[k], want[k]) for k in want)
    layer_4 = {n for table in graph.stamps for n in table.ids() if n.startswith("layers.4.")}
    assert (layer_4 == set()) is planted  # the float64 layer is not in the instance table
    model = _model(planted)
    assert got["layers.4.root"].dtype == (torch.float64 if planted else torch.float32)
    assert bits_equal(got["layers.4.root"], torch.sqrt(model.layers[4].scale.detach()) - 2.0)


@pytest.mark.parametrize("planted", [False, True], ids=["identical", "planted-float64"])
def test_the_compiled_plan_equals_the_plain_one(planted: bool) -> None:
    with stamping(False):
        plain = compile_plan(_model(planted), [scaling_spec(), _mixed_spec()])
    stamped = compile_plan(_model(planted), [scaling_spec(), _mixed_spec()])
    assert _differences(plain, stamped) == []
    for name, entry in stamped.entries.items():
        if isinstance(entry.storage, torch.Tensor):
            assert bits_equal(entry.storage, plain.entries[name].storage), name


def test_canary_values_handed_to_the_wrong_layers_are_refused(
        monkeypatch: pytest.MonkeyPatch) -> None:
    real = columns._column

    def shifted(*args: Any) -> Any:  # the planted bug: each layer gets its neighbour's value
        out = real(*args)
        return None if out is None else out[1:] + out[:1]

    monkeypatch.setattr(columns, "_column", shifted)
    with pytest.raises(SpecValidationError, match="differs from eager evaluation"):
        compile_plan(_model(), [scaling_spec()])


def test_sources_read_by_building_are_the_models_and_are_dropped() -> None:
    """The evaluation takes each source as building the graph read it (the model's own
    object, not a copy); the compiled plan keeps none of them (the engine may replace one)."""
    model = _model()
    graph = build_graph(model, match_specs(model, [scaling_spec()]))
    assert set(graph.read_sources) == set(graph.sources())
    for i, layer in enumerate(model.layers):
        assert graph.read_sources[f"layers.{i}.scale"] is layer.scale
        assert graph.read_sources[f"layers.{i}.weight"] is layer.weight
    plan = compile_plan(_model(), [scaling_spec()])
    assert plan.graph.read_sources == {}
