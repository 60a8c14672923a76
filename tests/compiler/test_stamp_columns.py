"""A template's facts proven over a column of layers (:func:`derivgraph.compiler.stamp_columns.
prove_rows`): a row it proves must get exactly what :func:`~derivgraph.compiler.stamp.facts_hold`
gives it (the objects the path probes found), and a row it does not prove takes the per-layer
path. Checked on columns mixing layers that differ from the template in one fact each (the
variants of ``test_stamp_facts``), and on whole compiles against stamping off. Canary: a
layout sweep planted to skip the dtype proves a row whose dtype differs."""

from __future__ import annotations

from typing import Any

import pytest
import torch

from derivgraph import compile_plan
from derivgraph.compiler import stamp, stamp_columns
from derivgraph.compiler.stamp import facts_hold, stamping
from derivgraph.compiler.stamp_columns import prove_rows

from .test_stamp import Stack, _differences, _layer_spec
from .test_stamp_facts import _VARIANTS, Layer, _bound, _every_probe, _Graph, _template


def _column(variants: list[str]) -> list[Any]:
    bounds = []
    for i, variant in enumerate(variants):
        module = Layer()
        change = _VARIANTS[variant]
        if change is not None:
            change(module)
        bounds.append(_bound(module, i + 1))
    return bounds


@pytest.mark.parametrize("variants", [["same"] * 5, list(_VARIANTS), list(_VARIANTS)[::-1]],
                         ids=["uniform", "mixed", "mixed-reversed"])
@pytest.mark.parametrize("derived", [(), ("layers.2.scale",)])
def test_a_proven_row_gets_what_every_probe_gives(variants: list[str],
                                                  derived: tuple[str, ...]) -> None:
    reads, graph = _template(), _Graph(derived)
    bounds = _column(variants)
    proven = prove_rows(graph, reads, bounds, [{}] * len(bounds))
    for bound, variant, got in zip(bounds, variants, proven, strict=True):
        want = _every_probe(graph, reads, bound)
        assert got is None or got == want, variant
        assert facts_hold(graph, reads, bound, {}) == want
        if variant in ("same", "buffer") and bound.qualify("scale") not in derived:
            assert got is not None, variant  # the sweeps prove what they cover


def test_canary_a_layout_sweep_that_skips_the_dtype_is_caught(
        monkeypatch: pytest.MonkeyPatch) -> None:
    def planted(got: list[Any], shape: Any, stride: Any, dtype: Any, device: Any) -> bool:
        return [t.shape for t in got] == [shape] * len(got)  # dtype, stride, device unread

    monkeypatch.setattr(stamp_columns, "_all_layout", planted)
    reads, graph = _template(), _Graph()
    bounds = _column(["dtype", "dtype"])
    assert _every_probe(graph, reads, bounds[0]) is None
    assert prove_rows(graph, reads, bounds, [{}, {}])[0] is not None  # the planted bug shows


def test_a_stack_proven_by_columns_compiles_as_stamping_off(
        monkeypatch: pytest.MonkeyPatch) -> None:
    layers = [{}, {}, {"n": 6}, {}, {"dtype": torch.float16}, {"k": 9}, {}, {"n": 6}, {}]
    with stamping(False):
        plain = compile_plan(Stack(layers), [_layer_spec()])
    calls: list[str] = []
    checked = stamp.facts_hold

    def counted(graph: Any, reads: Any, bound: Any, params: Any) -> Any:
        calls.append(bound.module_path)
        return checked(graph, reads, bound, params)

    monkeypatch.setattr(stamp, "facts_hold", counted)
    stamped = compile_plan(Stack(layers), [_layer_spec()])
    assert _differences(plain, stamped) == []
    assert stamped.graph.stamped == 5  # layers 1, 3, 6, 8 from layer 0; layer 7 from 2
    # only the rows no column proof proved are checked one by one (layer 7: by layer 2's)
    assert calls == ["layers.4", "layers.5", "layers.5"]
