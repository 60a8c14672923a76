"""Stamping past resolution: each phase's per-layer proof, and a canary for each shortcut.

A stamped layer reuses its template's shape inference and lowering only when
:func:`derivgraph.compiler.layers.closed_layers` proves its subgraph is the template's renamed
with nothing else attached, and the phase's own per-layer facts match (source layouts for the
inference; storage type, layout and overlaps for the lowering). Each test below builds a layer
that differs in one such fact; its canary removes the check and sees the plan go wrong.
"""

from __future__ import annotations

from typing import Any

import pytest
import torch
from torch import nn

from derivgraph import DerivedTensor, Spec, Target, compile_plan
from derivgraph.compiler import infer, layers, stamp
from derivgraph.compiler.bind import match_specs
from derivgraph.compiler.build import build_graph
from tests.compiler.test_stamp import Stack, _check_equivalent, _differences, _layer_spec


def _fp16_second_layer(monkeypatch: pytest.MonkeyPatch) -> Any:
    """Layer 1 (float16) stamped from layer 0 (float32) by a matcher that ignores facts."""
    monkeypatch.setattr(stamp, "_matches", lambda graph, template, bound, params: {})
    model = Stack([{}, {"dtype": torch.float16}])
    graph = build_graph(model, match_specs(model, [_layer_spec()]))
    assert graph.stamped == 1 and len(layers.closed_layers(graph)) == 1
    return graph


def test_inference_checks_each_stamped_layers_source_layouts(
        monkeypatch: pytest.MonkeyPatch) -> None:
    graph = _fp16_second_layer(monkeypatch)
    assert graph.derived["layers.1.inv"].meta.dtype == torch.float16
    assert graph.derived["layers.0.inv"].meta.dtype == torch.float32


def test_canary_inference_without_the_layout_check_takes_the_templates_dtype(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(infer, "_layout", lambda node: None)  # planted: every layout matches
    graph = _fp16_second_layer(monkeypatch)
    assert graph.derived["layers.1.inv"].meta.dtype == torch.float32  # the planted bug shows
