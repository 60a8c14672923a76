"""The scaling workload stamped: the same plan as compiled layer by layer, across reloads.

Two identical scaling models (:mod:`derivgraph.tools.bench_scaling`) compiled with stamping off
and on give the same plan (:func:`tests.compiler.test_stamp._differences`); weights B then A
are loaded in place and each plan refilled with ``verify``: no bound tensor or source moved,
every derived tensor keeps its startup address, both plans hold the same bits, the values a
hand computation gives, and back at A the startup values. A layer planted with a difference
(its ``scale`` of another dtype or shape) is resolved on its own (fewer stamped layers, the
same plan); the canary stamps the layer of another shape anyway (matchers that ignore the
facts) and the equivalence check goes red.
"""

from __future__ import annotations

from typing import Any

import pytest
import torch
from torch import nn

from derivgraph import compile_plan
from derivgraph.compare import bits_equal
from derivgraph.compiler import stamp, stamp_params
from derivgraph.compiler.stamp import stamping
from derivgraph.tools.bench_scaling import scaling_model, scaling_spec
from tests.compiler.test_stamp import _differences, _same_values, _values

LAYERS = 12
PLANTED = 5  # the layer that differs


def _model(plant: dict[str, Any] | None = None) -> nn.Module:
    torch.manual_seed(0)
    model = scaling_model(LAYERS)
    if plant:
        layer = model.layers[PLANTED]
        scale = torch.rand(plant.get("n", 8), dtype=plant.get("dtype", torch.float32)) + 0.5
        weight = torch.rand(plant.get("n", 8), dtype=plant.get("dtype", torch.float32))
        layer.scale = nn.Parameter(scale, requires_grad=False)
        layer.weight = nn.Parameter(weight, requires_grad=False)
    _load(model, 0)  # weights A
    return model


def _load(model: nn.Module, seed: int) -> None:
    """New weights, copied into the parameters in place (as an engine's reload does)."""
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for p in model.parameters():
            p.copy_((torch.rand(p.shape, generator=g) + 0.5).to(p.dtype))


def _expected(model: nn.Module) -> dict[str, torch.Tensor]:
    out = {}
    for i, layer in enumerate(model.layers):
        out[f"layers.{i}.inv"] = 1.0 / layer.scale.detach()
        out[f"layers.{i}.prod"] = layer.scale.detach() * layer.weight.detach()
    return out


@pytest.mark.parametrize("plant", [None, {"dtype": torch.float64}, {"n": 6}],
                         ids=["identical", "planted-dtype", "planted-shape"])
def test_stamped_equals_plain_after_reloads_and_nothing_moves(plant: dict[str, Any] | None
                                                              ) -> None:
    with stamping(False):
        plain_model = _model(plant)
        plain = compile_plan(plain_model, [scaling_spec()])
    stamped_model = _model(plant)
    stamped = compile_plan(stamped_model, [scaling_spec()])
    assert plain.graph.stamped == 0
    # identical: every layer after the first; planted: that layer resolves alone
    assert stamped.graph.stamped == (LAYERS - 1 if plant is None else LAYERS - 2)
    assert _differences(plain, stamped) == []
    startup = _values(stamped)
    ptrs = {n: e.storage.data_ptr() for n, e in stamped.entries.items()
            if isinstance(e.storage, torch.Tensor)}
    for seed in (1, 0):  # weights B, then A again
        for model, plan in ((plain_model, plain), (stamped_model, stamped)):
            _load(model, seed)
            report = plan.refill(verify=True)
            assert report.moved == []
        assert _same_values(_values(plain), _values(stamped)), seed
        for node_id, value in _expected(stamped_model).items():
            assert bits_equal(stamped.entries[node_id].storage, value), node_id
            assert getattr(stamped_model.get_submodule(node_id.rpartition(".")[0]),
                           node_id.rpartition(".")[2]) is stamped.entries[node_id].storage
        assert {n: e.storage.data_ptr() for n, e in stamped.entries.items()
                if isinstance(e.storage, torch.Tensor)} == ptrs
    assert _same_values(_values(stamped), startup)  # back at A: the startup values


def test_canary_a_planted_layer_stamped_anyway_is_caught(monkeypatch: pytest.MonkeyPatch
                                                         ) -> None:
    """Planted bug: the matchers ignore the facts, so the layer whose ``scale`` has another
    shape takes the template's params (``E``) and formulas; the stamped plan must differ from
    the plain one (its ``strides`` has the template's size)."""
    monkeypatch.setattr(stamp, "_matches", lambda graph, template, bound, params: {})
    monkeypatch.setattr(stamp_params, "_param_matches", lambda graph, reads, bound: True)
    with stamping(False):
        plain = compile_plan(_model({"n": 6}), [scaling_spec()])
    stamped = compile_plan(_model({"n": 6}), [scaling_spec()])
    assert stamped.graph.stamped == LAYERS - 1
    assert _differences(plain, stamped) != []
    assert stamped.entries[f"layers.{PLANTED}.strides"].storage.shape == (8,)  # wrong: 6
