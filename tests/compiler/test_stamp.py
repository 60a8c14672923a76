"""Compile once, stamp the rest: a stamped plan equals the plan compiled layer by layer.

The oracle for every model: compile with stamping off and on (two identical models) and compare
the printed pass, the node set and order (with every node's op, arguments and layout), the
steps, every entry's storage binding, the generated pass's namespace (every bound key, its name
and the tensor or list it holds), and the values after A -> B -> A reloads, bit for bit.
Canaries: layers that differ only in a fact the key must hold (a config number read by a
formula, a source dtype, an ``each()`` expansion) are never stamped together, and a matcher
that ignores the facts (a planted bug) makes the comparison go red.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
import torch
from torch import nn

from derivgraph import DerivedTensor, Spec, Target, compile_plan, load_specs
from derivgraph.compare import bits_equal
from derivgraph.compiler import stamp
from derivgraph.compiler.codegen import Flat
from derivgraph.compiler.graph import freeze
from derivgraph.compiler.stamp import stamping
from derivgraph.tools.bench_scaling import scaling_model, scaling_spec
from derivgraph.tools.deepseek_workload import DeepseekModel, deepseek_specs
from derivgraph.tools.reference_models import (
    RefConfig,
    build_reference_model,
    make_weights,
    reference_spec_path,
)


def _node_facts(plan: Any) -> list[tuple[Any, ...]]:
    return [(n.id, n.kind, n.op, freeze(n.args), freeze(n.kwargs), n.inputs, n.shape,
             n.stride, str(n.dtype), str(n.device)) for n in plan.graph.nodes.values()]


def _bindings(plan: Any) -> list[tuple[Any, str, Any]]:
    """The generated pass's namespace: each key, its name and what the name holds (a tensor
    by id of its storage's first position in the plan, a list item by item)."""
    where = {}
    for node_id, entry in plan.entries.items():
        if isinstance(entry.storage, torch.Tensor):
            where.setdefault(id(entry.storage), node_id)
    for node_id, tensor in plan.tensors.sources.items():
        where.setdefault(id(tensor), node_id)

    def held(value: Any) -> Any:
        if isinstance(value, list):
            return [held(v) for v in value]
        if isinstance(value, torch.Tensor):
            return where.get(id(value), (tuple(value.shape), str(value.dtype)))
        return type(value).__name__

    def addressed(key: Any, value: Any) -> Any:
        """A flat group's memory spans and element addresses depend on where the allocator
        put each model's tensors: compared by role and dtype (its values, by the run)."""
        if isinstance(key, Flat) and key.role.startswith(("span_", "at_")):
            return key.role, str(value.dtype)
        return held(value)

    b = plan.programs.bindings
    return [(key, name, addressed(key, b.globals.get(name))) for key, name in b.names.items()]


def _differences(plain: Any, stamped: Any) -> list[str]:
    """Every way the stamped plan differs from the plain one (empty: the same plan)."""
    out = []
    if stamped.source() != plain.source():
        out.append("printed pass")
    if _node_facts(stamped) != _node_facts(plain):
        out.append("nodes")
    if [(s.node, s.action, s.target) for s in stamped.steps] != \
            [(s.node, s.action, s.target) for s in plain.steps]:
        out.append("steps")
    if list(stamped.entries) != list(plain.entries):
        out.append("entry ids")
    if _bindings(stamped) != _bindings(plain):
        out.append("bindings")
    for node_id, entry in plain.entries.items():
        other = stamped.entries.get(node_id)
        if other is None:
            continue
        a, b = entry.storage, other.storage
        same = (other.slot, other.adopted, type(b)) == (entry.slot, entry.adopted, type(a))
        if isinstance(a, torch.Tensor):
            same = same and isinstance(b, torch.Tensor) and bits_equal(a, b) and \
                (b.shape, b.stride(), b.dtype) == (a.shape, a.stride(), a.dtype)
        else:
            same = same and a == b
        if not same:
            out.append(f"entry {node_id}")
    return out


def _values(plan: Any) -> dict[str, Any]:
    return {n: e.storage.clone() if isinstance(e.storage, torch.Tensor) else e.storage
            for n, e in plan.entries.items()}


def _same_values(a: dict[str, Any], b: dict[str, Any]) -> bool:
    return a.keys() == b.keys() and all(
        bits_equal(a[k], b[k]) if isinstance(a[k], torch.Tensor) else a[k] == b[k] for k in a)


def _check_equivalent(make: Callable[[], nn.Module], specs: Callable[[], list[Spec]],
                      load: Callable[[nn.Module, str], None] | None = None) -> Any:
    """Compile ``make()`` with stamping off and on; the same plan, A -> B -> A bit-exact."""
    with stamping(False):
        plain_model = make()
        plain = compile_plan(plain_model, specs())
    stamped_model = make()
    stamped = compile_plan(stamped_model, specs())
    assert plain.graph.stamped == 0
    assert _differences(plain, stamped) == []
    if load is not None:
        startup = _values(plain)
        for which in ("B", "A"):
            for model, plan in ((plain_model, plain), (stamped_model, stamped)):
                load(model, which)
                plan.run()
            assert _same_values(_values(plain), _values(stamped)), which
        assert _same_values(_values(stamped), startup)  # back at A: the startup values
    return stamped


def test_reference_model_stamped_equals_plain() -> None:
    cfg = RefConfig(layers=5)
    weights = {w: make_weights(cfg, seed) for w, seed in (("A", 10), ("B", 20))}

    def load(model: nn.Module, which: str) -> None:
        model.load_weights(weights[which])

    plan = _check_equivalent(lambda: build_reference_model(weights["A"], cfg=cfg),
                             lambda: load_specs([reference_spec_path()]), load)
    assert plan.graph.stamped >= cfg.layers - 1  # the blocks after the first are stamped


def test_deepseek_workload_stamped_equals_plain() -> None:
    def make() -> nn.Module:
        torch.manual_seed(0)
        model = DeepseekModel(scale=1 / 256, layers=6, experts=16)
        model.reload(0)  # weights A
        model.post_load()  # the engine made the derived tensors: adopted
        return model

    def load(model: nn.Module, which: str) -> None:
        model.reload(1 if which == "B" else 0)

    plan = _check_equivalent(make, deepseek_specs, load)
    assert plan.graph.stamped == 5 + 7  # 6 MoE layers, 8 drafters: one template each


class Layer(nn.Module):
    """A layer whose layouts, config number and extra parameters can be varied."""

    def __init__(self, n: int = 8, dtype: torch.dtype = torch.float32, k: int = 7,
                 extras: int = 2, transposed: bool = False, seed: int = 0):
        super().__init__()
        g = torch.Generator().manual_seed(seed)
        self.k = k
        self.scale = nn.Parameter((0.5 + torch.rand(n, generator=g)).to(dtype),
                                  requires_grad=False)
        w = torch.rand(4, n, generator=g).t() if transposed else torch.rand(n, 4, generator=g)
        self.weight = nn.Parameter(w, requires_grad=False)
        for i in range(extras):
            self.register_parameter(f"extra{i}", nn.Parameter(torch.rand(3, generator=g),
                                                              requires_grad=False))

    def load(self, seed: int) -> None:
        g = torch.Generator().manual_seed(seed)
        with torch.no_grad():
            for p in self.parameters():
                p.copy_(torch.rand(p.shape, generator=g).to(p.dtype) + 0.5)


class Stack(nn.Module):
    def __init__(self, layers: list[dict[str, Any]]):
        super().__init__()
        self.layers = nn.ModuleList(Layer(seed=i, **kw) for i, kw in enumerate(layers))

    def load(self, which: str) -> None:
        for i, layer in enumerate(self.layers):
            layer.load(i + (1000 if which == "B" else 0))


def _layer_spec() -> Spec:
    def d(name: str, formula: str) -> DerivedTensor:
        return DerivedTensor(name=name, kind="attribute", formula=formula)

    return Spec(name="layer", target=Target(module_class=["Layer"]),
                params={"E": "scale.shape[0]"},
                derived=[d("inv", "1.0 / scale"), d("wt", "contiguous(weight.t())"),
                         d("ks", "full([E], k, dtype=int64)"),
                         d("typed", "cast(weight, scale.dtype)"),
                         d("extras", "cat([x for x in each('extra*')], 0)"),
                         DerivedTensor(name="scale_alias", kind="alias", of="scale")])


HETEROGENEOUS = [{}, {}, {"n": 6}, {}, {"dtype": torch.float16}, {"k": 9}, {"extras": 3},
                 {"transposed": True}, {}, {"n": 6}]


def _loaded(layers: list[dict[str, Any]]) -> Stack:
    model = Stack(layers)
    model.load("A")
    return model


def test_heterogeneous_layers_stamped_equals_plain() -> None:
    plan = _check_equivalent(lambda: _loaded(HETEROGENEOUS), lambda: [_layer_spec()],
                             lambda model, which: model.load(which))
    # stamped: layers 1, 3 and 8 from layer 0, layer 9 from layer 2; every other one differs
    assert plan.graph.stamped == 4
    assert plan.entries["layers.5.ks"].storage.tolist() == [9] * 8
    assert plan.entries["layers.4.typed"].storage.dtype == torch.float16
    assert plan.entries["layers.6.extras"].storage.shape == (9,)


@pytest.mark.parametrize("differ", [{"k": 9}, {"dtype": torch.float16}, {"extras": 3}],
                         ids=["config-number", "source-dtype", "each-expansion"])
def test_layers_differing_in_one_fact_are_not_stamped_together(differ: dict[str, Any]) -> None:
    plan = compile_plan(Stack([{}, differ]), [_layer_spec()])
    assert plan.graph.stamped == 0
    other = Layer(seed=1, **differ)  # what layer 1 must hold, computed by hand
    assert bits_equal(plan.entries["layers.1.ks"].storage,
                      torch.full((8,), other.k, dtype=torch.int64))
    assert bits_equal(plan.entries["layers.1.typed"].storage,
                      other.weight.to(other.scale.dtype))
    assert bits_equal(plan.entries["layers.1.extras"].storage,
                      torch.cat([p for n, p in other.named_parameters() if n.startswith("extra")]))


@pytest.mark.parametrize("differ", [{"k": 9}, {"dtype": torch.float16}, {"extras": 3}],
                         ids=["config-number", "source-dtype", "each-expansion"])
def test_canary_a_matcher_that_ignores_facts_is_caught(monkeypatch: pytest.MonkeyPatch,
                                                       differ: dict[str, Any]) -> None:
    """Planted bug: every layer of a kind matches the template. The equivalence check
    must see the stamped layer differ from its own compile."""
    monkeypatch.setattr(stamp, "_matches", lambda graph, template, bound, params: {})
    with stamping(False):
        plain = compile_plan(Stack([{}, differ]), [_layer_spec()])
    stamped = compile_plan(Stack([{}, differ]), [_layer_spec()])
    assert stamped.graph.stamped == 1
    assert _differences(plain, stamped) != []


def test_scaling_workload_stamps_every_layer_after_the_first() -> None:
    def make() -> nn.Module:
        torch.manual_seed(0)
        return scaling_model(50)

    plan = _check_equivalent(make, lambda: [scaling_spec()])
    assert plan.graph.stamped == 49


def test_switch_turns_stamping_off(monkeypatch: pytest.MonkeyPatch) -> None:
    with stamping(False):
        assert compile_plan(scaling_model(3), [scaling_spec()]).graph.stamped == 0
    assert compile_plan(scaling_model(3), [scaling_spec()]).graph.stamped == 2


def _inv_graph(twin_guard: bool, monkeypatch: pytest.MonkeyPatch) -> Any:
    """Layers 0 and 1 of different sizes, inferred with layer 1's op named a twin of layer 0's
    (a wrong twin); ``twin_guard=False`` plants the bug of trusting the twin blindly."""
    from derivgraph.compiler import infer
    from derivgraph.compiler.bind import match_specs
    from derivgraph.compiler.build import build_graph

    if not twin_guard:
        monkeypatch.setattr(infer._StampedMeta, "_same_inputs", lambda self, a, b: True)
    model = Stack([{}, {"n": 6}])
    with stamping(False):
        graph = build_graph(model, match_specs(model, [_layer_spec()]))
    ops = [graph.derived[f"layers.{i}.inv"].input for i in (0, 1)]
    infer.infer_shapes(graph, {ops[1]: ops[0]})
    return graph


def test_a_twin_with_other_input_layouts_is_not_trusted(monkeypatch: pytest.MonkeyPatch) -> None:
    graph = _inv_graph(True, monkeypatch)
    assert tuple(graph.derived["layers.1.inv"].meta.shape) == (6,)
    assert graph.issues == []


def test_canary_a_twin_trusted_blindly_gives_the_wrong_layout(
        monkeypatch: pytest.MonkeyPatch) -> None:
    graph = _inv_graph(False, monkeypatch)
    assert tuple(graph.derived["layers.1.inv"].meta.shape) == (8,)  # the planted bug shows


class _Knob:
    """A config object the key cannot summarise (a plain object in a list)."""

    def __init__(self, a: int):
        self.a = a


class KnobLayer(nn.Module):
    def __init__(self, second: int):
        super().__init__()
        self.scale = nn.Parameter(torch.ones(8), requires_grad=False)
        self.knobs = [_Knob(1), _Knob(second)]


class KnobStack(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.layers = nn.ModuleList([KnobLayer(2), KnobLayer(3)])


def _knob_plan() -> Any:
    spec = Spec(name="knob", target=Target(module_class=["KnobLayer"]),
                params={"E": "scale.shape[0]"},
                derived=[DerivedTensor(name="ks", kind="attribute",
                                       formula="full([E], knobs[E - 7].a, dtype=int64)")])
    return compile_plan(KnobStack(), [spec])


def test_a_value_the_key_cannot_describe_is_never_stamped() -> None:
    plan = _knob_plan()
    assert plan.graph.stamped == 0
    assert plan.entries["layers.1.ks"].storage.tolist() == [3] * 8


def test_canary_an_undescribed_value_taken_as_keyable_is_stamped_wrong(
        monkeypatch: pytest.MonkeyPatch) -> None:
    from derivgraph.compiler import reads

    monkeypatch.setattr(reads, "_freeze", lambda value, top=False: ("planted", type(value)))
    plan = _knob_plan()
    assert plan.graph.stamped == 1
    assert plan.entries["layers.1.ks"].storage.tolist() == [2] * 8  # the planted bug shows


@pytest.mark.parametrize("on", [False, True], ids=["plain", "stamped"])
def test_every_layer_reports_its_own_oversized_values(monkeypatch: pytest.MonkeyPatch,
                                                      on: bool) -> None:
    """The size check runs once per meta value object (a stamped op shares its template's):
    a value found within the limits is not checked again, an oversized one is, so every
    layer reports its own oversized values (1 / scale, scale * weight, the alias), and the
    one ``full`` node all layers share (CSE) is reported once."""
    from derivgraph.errors import SpecValidationError
    from derivgraph.limits import LIMITS

    monkeypatch.setattr(LIMITS, "max_numel", 4)  # every [8] value is oversized
    with stamping(on), pytest.raises(SpecValidationError) as raised:
        compile_plan(scaling_model(5), [scaling_spec()])
    oversized = [i for i in raised.value.issues if "elements (limit 4" in i.message]
    assert len(oversized) == 16
    assert sorted(i.node for i in oversized if not i.node.endswith("strides")) == sorted(
        f"layers.{n}.{name}" for n in range(5) for name in ("inv", "prod", "scale_alias"))


def test_canary_lists_bound_in_another_layer_order_are_caught(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Planted bug: a stamped compile binds every prebuilt list reversed (each list of a
    grouped call reversed alike, so every output still meets its own operands and the pass
    computes the same values). The printed pass, steps and entries are unchanged; the
    namespace comparison is what goes red."""
    from derivgraph.compiler import codegen

    real = codegen.Bindings.bind

    def swapped(self: Any, key: Any, hint: str, value: Any) -> str:
        if isinstance(key, codegen.TensorList) and stamp.stamping_enabled():
            value = value[::-1]
        return real(self, key, hint, value)

    monkeypatch.setattr(codegen.Bindings, "bind", swapped)
    plans = []
    for on in (False, True):
        torch.manual_seed(0)
        with stamping(on):
            plans.append(compile_plan(scaling_model(6), [scaling_spec()]))
    assert _differences(*plans) == ["bindings"]
