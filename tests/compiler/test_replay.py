"""The compiled replay of a template (:class:`derivgraph.compiler.replay.Replay`).

A stamped layer's ops are made from the template's calls with CSE keys built from frozen
constants; those keys must be exactly what :func:`~derivgraph.compiler.graph.freeze` gives the
node's own arguments, or a later formula with the same op would not find it. The stamped-vs-
plain oracle (``tests/compiler/test_stamp.py``) compares the whole plan; the canaries plant a
wrong key and a wrong input slot and see each check go red. The program is typed steps (the
scaling template's asserted as values); a source call naming a path made before it is no step,
only a node the row names, and a row's nodes are its slots at the template's kept positions
(canary: rows read at shifted slots are a DG error).
"""

from __future__ import annotations

from typing import Any

import pytest

from derivgraph import compile_plan, load_specs
from derivgraph.compiler import replay, stamp
from derivgraph.compiler.graph import freeze
from derivgraph.compiler.ir import NodeKind
from derivgraph.compiler.replay import FlatStep, SourceStep
from derivgraph.compiler.stamp import stamping
from derivgraph.errors import SpecValidationError
from derivgraph.tools.bench_scaling import scaling_model, scaling_spec
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


def _programs(monkeypatch: pytest.MonkeyPatch) -> list[replay.Replay]:
    made: list[replay.Replay] = []
    init = replay.Replay.__init__

    def recorded(self: replay.Replay, *args: Any) -> None:
        init(self, *args)
        made.append(self)

    monkeypatch.setattr(replay.Replay, "__init__", recorded)
    return made


def test_the_scaling_template_is_typed_steps_over_named_slots(
        monkeypatch: pytest.MonkeyPatch) -> None:
    made = _programs(monkeypatch)
    plan = compile_plan(scaling_model(3), [scaling_spec()])
    [program] = made
    assert plan.graph.stamped == 2
    # calls: scale, 1.0 / scale, scale, weight, scale * weight, full (no node), scale
    assert program.rels == ["scale", "weight"] and program.suffixes == [".scale", ".weight"]
    assert program.tail == [None, None, "%3:full"]  # op slots 2..4: div, mul, the constant
    assert [type(s) for s in program.steps] == [SourceStep, FlatStep, SourceStep, FlatStep]
    source, div, _, mul = program.steps
    assert (source.slot, source.parts, source.rel) == (0, ("scale",), "scale")
    assert source.layout is not None and source.layout[1:3] == ((8,), (1,))
    assert (div.name, div.parts, div.keyed, div.order, div.out, div.result) == \
        ("div", ((-1, 1.0), (0, None)), ((-1, freeze(1.0)), (0, None)), (0,), 2, "%1:div")
    assert (mul.parts, mul.order, mul.out) == (((0, None), (1, None)), (0, 1), 3)
    assert program.made_slots == [0, 2, 0, 1, 3, 0]  # a repeated source: named, no step
    assert program.inputs == [2, 3, 4, 0]
    assert program.template_nodes("layers.0") == ["layers.0.scale", "layers.0.weight",
                                                  "%1:div", "%2:mul", "%3:full"]
    [table] = plan.graph.stamps
    assert table.rows[1] == ("layers.2.inv", "layers.2.prod", "layers.2.strides",
                             "layers.2.scale_alias", "layers.2.scale", "%6:div",
                             "layers.2.weight", "%7:mul")


def test_canary_rows_read_at_shifted_slots_are_caught(monkeypatch: pytest.MonkeyPatch) -> None:
    kept = stamp.Template.kept

    def planted(self: stamp.Template, *args: Any) -> None:
        kept(self, *args)
        self.keep_slots = self.keep_slots[1:] + self.keep_slots[:1]

    monkeypatch.setattr(stamp.Template, "kept", planted)
    # the row's derived tensors' values are not its nodes at the template's value positions
    with pytest.raises(SpecValidationError, match=r"DG013.*the stamped row of layers\.1 "
                                                  r"gives layers\.1\.inv the value %4:div"):
        compile_plan(scaling_model(3), [scaling_spec()])


def test_the_compiled_steps_replay_flat_and_other_calls(monkeypatch: pytest.MonkeyPatch) -> None:
    """A program runs as one compiled function (``_compile_steps``): the reference model's
    templates hold both flat op calls and others (``getitem`` of a slice, ``reshape`` of a
    list), and the stamped plan is the plain one."""
    made = _programs(monkeypatch)
    plain, stamped = _reference()
    kinds = {type(step) for program in made for step in program.steps}
    assert {replay.FlatStep, replay.CallStep} <= kinds
    ran = [program for program in made if program._steps is not None]  # stamped a row
    assert {type(step) for program in ran for step in program.steps} >= {replay.CallStep}
    assert stamped.graph.stamped >= 2 and _differences(plain, stamped) == []
    assert _keys_agree(stamped.graph)


def test_canary_a_compiled_call_step_keyed_wrong_is_caught(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Planted: the compiled program's other calls key their op with something else than
    ``freeze`` of its arguments; the stamped ops are not CSE's entry for their own."""
    real = replay._call_step

    def planted(step: replay.CallStep, vals: list[Any], op_keyed: Any, twins: Any) -> None:
        real(step, vals, lambda name, args, kwargs, key, refs:
             op_keyed(name, args, kwargs, ("planted", key), refs), twins)

    monkeypatch.setattr(replay, "_call_step", planted)
    _, stamped = _reference()
    assert stamped.graph.stamped >= 2
    assert not _keys_agree(stamped.graph)
