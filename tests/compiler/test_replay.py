"""The compiled replay of a template (:class:`derivgraph.compiler.replay.Replay`).

A stamped layer's ops are made from the template's calls with CSE keys built from frozen
constants; those keys must be exactly what :func:`~derivgraph.compiler.graph.freeze` gives the
node's own arguments, or a later formula with the same op would not find it. The stamped-vs-
plain oracle (``tests/compiler/test_stamp.py``) compares the whole plan; the canaries plant a
wrong key and a wrong input slot and see each check go red.
"""

from __future__ import annotations

from typing import Any

import pytest

from derivgraph import compile_plan, load_specs
from derivgraph.compiler import replay
from derivgraph.compiler.graph import freeze
from derivgraph.compiler.ir import NodeKind
from derivgraph.compiler.stamp import stamping
from derivgraph.errors import SpecValidationError
from derivgraph.tools.reference_models import (
    RefConfig,
    build_reference_model,
    make_weights,
    reference_spec_path,
)
from tests.compiler.test_stamp import Stack, _differences, _layer_spec


def _keys_agree(graph: Any) -> bool:
    """Every op node is CSE's entry for its own frozen arguments."""
    return all(graph._cse.get((n.op, freeze(n.args), freeze(n.kwargs))) == n.id
               for n in graph.nodes.values() if n.kind is NodeKind.OP)


def test_stamped_ops_are_found_by_their_own_frozen_arguments() -> None:
    plan = compile_plan(Stack([{}, {}, {}]), [_layer_spec()])
    assert plan.graph.stamped == 2
    assert _keys_agree(plan.graph)


def test_canary_a_replay_key_other_than_freeze_is_caught(monkeypatch: pytest.MonkeyPatch) -> None:
    real = replay.freeze
    monkeypatch.setattr(replay, "freeze", lambda v: ("planted", real(v)))
    plan = compile_plan(Stack([{}, {}, {}]), [_layer_spec()])
    assert plan.graph.stamped == 2
    assert not _keys_agree(plan.graph)


def _reference() -> tuple[Any, Any]:
    cfg = RefConfig(layers=3)
    weights = make_weights(cfg, 10)
    with stamping(False):
        plain = compile_plan(build_reference_model(weights, cfg=cfg),
                             load_specs([reference_spec_path()]))
    stamped = compile_plan(build_reference_model(weights, cfg=cfg),
                           load_specs([reference_spec_path()]))
    return plain, stamped


def test_aliases_of_a_layers_own_derived_tensor_replay_to_it() -> None:
    plain, stamped = _reference()
    assert stamped.graph.stamped >= 2 and _differences(plain, stamped) == []
    alias = stamped.graph.derived["layers.1.moe.quant_method.moe_kernel.fused_experts.c_strides2"]
    assert alias.input == "layers.1.moe.quant_method.moe_kernel.fused_experts.ab_strides1"


def test_canary_inputs_replayed_to_the_wrong_slot_are_caught(
        monkeypatch: pytest.MonkeyPatch) -> None:
    init = replay.Replay.__init__

    def planted(self: replay.Replay, *args: Any) -> None:
        init(self, *args)
        self.inputs = [None if s is None else self.size - 1 for s in self.inputs]

    monkeypatch.setattr(replay.Replay, "__init__", planted)
    # the rows' record: each derived tensor's value is the row's node at its template's
    # value's position (a DG error, a stamper bug)
    with pytest.raises(SpecValidationError, match=r"DG013.*the stamped row of layers\.1 "
                                                  r"gives layers\.1\.\w+ the value"):
        compile_plan(Stack([{}, {}, {}]), [_layer_spec()])
