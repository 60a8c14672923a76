"""Adoption's read of each stamped layer's derived names, decided per template column.

:func:`derivgraph.compiler.absent.absent_names` proves, per column of a template, which derived
names no stamped layer holds yet (adoption then takes them as missing without reading them).
On the scaling workload every derived tensor of every stamped layer is proven absent; a layer
whose engine already holds an equal ``inv`` tensor is read the generic way and adopts it (as
the plain compile does); a class attribute of the same name keeps the whole column generic.
Canary: a column decision without the per-layer sweep allocates over the engine's tensor, and
the plan differs from the plain one.
"""

from __future__ import annotations

from typing import Any

import pytest
import torch
from torch import nn

import derivgraph.adoption as adoption
from derivgraph import compile_plan
from derivgraph.compiler.absent import absent_names
from derivgraph.compiler.bind import match_specs
from derivgraph.compiler.build import build_graph
from derivgraph.compiler.stamp import stamping
from derivgraph.tools.bench_scaling import scaling_model, scaling_spec
from tests.compiler.test_stamp import _differences

LAYERS = 6
HELD = 3  # the layer whose engine already holds `inv`
NAMES = ("inv", "prod", "strides", "scale_alias")


def _model(held: bool = False) -> nn.Module:
    torch.manual_seed(0)
    model = scaling_model(LAYERS)
    if held:  # the engine made `inv` itself (equal to the formula): adopted, never allocated
        layer = model.layers[HELD]
        layer.inv = 1.0 / layer.scale.detach()
    return model


def _absent(model: nn.Module) -> set[str]:
    return absent_names(build_graph(model, match_specs(model, [scaling_spec()])))


def test_every_stamped_derived_name_is_proven_absent() -> None:
    got = _absent(_model())
    # layer 0 is the template (read the generic way); every later layer is stamped
    assert got == {f"layers.{i}.{n}" for i in range(1, LAYERS) for n in NAMES}


def test_a_layer_holding_the_name_is_read_and_adopts_like_the_plain_compile() -> None:
    assert f"layers.{HELD}.inv" not in _absent(_model(held=True))
    with stamping(False):
        plain = compile_plan(_model(held=True), [scaling_spec()])
    model = _model(held=True)
    engine_inv = model.layers[HELD].inv
    stamped = compile_plan(model, [scaling_spec()])
    entry = stamped.entries[f"layers.{HELD}.inv"]
    assert entry.adopted and entry.storage is engine_inv
    assert [n for n, e in stamped.entries.items() if e.adopted] == \
        [n for n, e in plain.entries.items() if e.adopted] == [f"layers.{HELD}.inv"]
    assert _differences(plain, stamped) == []
    assert torch.equal(model.layers[HELD].inv, 1.0 / model.layers[HELD].scale.detach())


def test_a_class_attribute_keeps_its_column_generic() -> None:
    model = _model()
    type(model.layers[0]).prod = None  # a class attribute: `slot_of` reads it as held
    got = _absent(model)
    assert not any(n.endswith(".prod") for n in got)
    assert {f"layers.{i}.inv" for i in range(1, LAYERS)} <= got


def test_canary_a_column_without_the_layer_sweep_allocates_over_the_engine_tensor(
        monkeypatch: pytest.MonkeyPatch) -> None:
    with stamping(False):
        plain = compile_plan(_model(held=True), [scaling_spec()])

    def unswept(graph: Any) -> set[str]:  # the planted bug: the template's decision for all
        return {i for layer in graph.stamps for i in layer.ids if i in graph.derived}

    monkeypatch.setattr(adoption, "absent_names", unswept)
    model = _model(held=True)
    engine_inv = model.layers[HELD].inv
    stamped = compile_plan(model, [scaling_spec()])
    entry = stamped.entries[f"layers.{HELD}.inv"]
    assert not entry.adopted and entry.storage is not engine_inv  # the bug shows
    assert _differences(plain, stamped) != []  # and the equivalence check is red
