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

from derivgraph import DerivedTensor, Spec, Target, compile_plan
from derivgraph.compare import bits_equal
from derivgraph.compiler import infer, layers, stamp
from derivgraph.compiler.bind import match_specs
from derivgraph.compiler.build import build_graph
from derivgraph.compiler.graph import DerivedGraph
from derivgraph.tools.bench_scaling import scaling_model, scaling_spec
from tests.compiler.test_stamp import Stack, _check_equivalent, _differences, _layer_spec


def _fp16_second_layer(monkeypatch: pytest.MonkeyPatch) -> Any:
    """Layer 1 (float16) stamped from layer 0 (float32) by a matcher that ignores facts."""
    monkeypatch.setattr(stamp, "_matches", lambda graph, template, bound, params: {})
    model = Stack([{}, {"dtype": torch.float16}])
    graph = build_graph(model, match_specs(model, [_layer_spec()]))
    assert graph.stamped == 1 and [len(t) for t in layers.closed_layers(graph)] == [1]
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


def _tagged_stack() -> Stack:
    """Four identical layers; layer 2 is tagged for a second spec (below)."""
    model = Stack([{}, {}, {}, {}])
    model.load("A")
    model.layers[2].tag = 1
    return model


def _shared_spec() -> Spec:
    """On the tagged layer only: the same formula as its ``inv`` (one op, shared by CSE)."""
    return Spec(name="again", target=Target(module_class=["Layer"], where={"tag": 1}),
                derived=[DerivedTensor(name="inv_again", kind="attribute", formula="1.0 / scale")])


def _by_target(plan: Any) -> dict[str, Any]:
    return {s.target: s.action for s in plan.steps}


def test_a_layer_whose_op_another_spec_shares_is_lowered_on_its_own() -> None:
    plan = _check_equivalent(_tagged_stack, lambda: [_layer_spec(), _shared_spec()],
                             lambda model, which: model.load(which))
    assert plan.graph.stamped == 3  # resolution stamps layers 1-3 of the first spec
    assert [row[0] for t in layers.closed_layers(plan.graph) for row in t.rows] == \
        ["layers.1.inv", "layers.3.inv"]
    actions = _by_target(plan)  # the shared op writes no storage straight: two copies
    assert actions["layers.2.inv"] == actions["layers.2.inv_again"] == "copy"
    assert actions["layers.1.inv"] == actions["layers.3.inv"] == "out"


def test_canary_a_layer_with_an_outside_user_taken_as_closed(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Planted bug: a row another spec's formula touched is not opened, so layer 2 is taken
    as closed; its nodes are then inferred from the template while the other spec's tensor
    reads its op before it has a value."""
    monkeypatch.setattr(layers, "open_rows", lambda touched, table: [False] * len(table))
    with pytest.raises(KeyError):
        compile_plan(_tagged_stack(), [_layer_spec(), _shared_spec()])


def _strided_stack() -> Stack:
    """Four identical layers; the engine already holds layer 2's ``inv``, equal to the
    formula but not contiguous (adopted as it is: the pass must copy into it)."""
    model = Stack([{}, {}, {}, {}])
    model.load("A")
    layer = model.layers[2]
    held = torch.empty(2 * layer.scale.numel())[::2]
    held.copy_(1.0 / layer.scale)
    layer.inv = held
    return model


def test_a_layer_whose_adopted_storage_differs_is_lowered_on_its_own() -> None:
    plan = _check_equivalent(_strided_stack, lambda: [_layer_spec()],
                             lambda model, which: model.load(which))
    assert plan.entries["layers.2.inv"].adopted
    assert not plan.entries["layers.2.inv"].storage.is_contiguous()
    actions = _by_target(plan)
    assert actions["layers.2.inv"] == "copy"
    assert actions["layers.1.inv"] == actions["layers.3.inv"] == "out"


def test_canary_a_layer_taken_without_its_storage_facts(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Planted bug: the storage facts are not compared, so layer 2 takes its template's
    ``out=`` step into storage that is not contiguous."""
    from derivgraph.compiler import lower_layers

    monkeypatch.setattr(lower_layers, "layer_facts", lambda ctx, ids: ())
    monkeypatch.setattr(lower_layers, "_columns_hold", lambda *args: True)
    with stamp.stamping(False):
        plain = compile_plan(_strided_stack(), [_layer_spec()])
    stamped = compile_plan(_strided_stack(), [_layer_spec()])
    assert _by_target(stamped)["layers.2.inv"] == "out"
    assert "steps" in _differences(plain, stamped)


def test_the_column_check_and_the_layer_check_agree() -> None:
    """The columns of a template's layers fail where one layer differs; each layer's own
    check then keeps every other one."""
    from derivgraph.compiler import lower_layers

    plan = compile_plan(_strided_stack(), [_layer_spec()])
    [table] = layers.closed_layers(plan.graph)
    assert table.column(0) == ["layers.1.inv", "layers.2.inv", "layers.3.inv"]
    ctx = plan.tensors
    facts = lower_layers.layer_facts(ctx, table.template)
    metas = [ctx.meta_env.get(n) for n in table.template]
    assert not lower_layers._columns_hold(ctx, table, (), metas, facts)
    assert lower_layers._columns_hold(ctx, table.subset([True, False, True]), (), metas, facts)
    assert [lower_layers.layer_facts(ctx, row) == facts for row in table.rows] == \
        [True, False, True]
    assert [row[0] for t in lower_layers.provable_layers(ctx) for row in t.rows] == \
        ["layers.1.inv", "layers.3.inv"]


def test_a_relayout_of_the_template_relowers_its_layers_on_their_own() -> None:
    """A permissive reload that changes the template layer's sources re-infers and re-lowers:
    the stamped layers no longer share its meta values and are lowered node by node, the
    same plan as without stamping."""
    plans = []
    for on in (False, True):
        with stamp.stamping(on):
            torch.manual_seed(0)
            model = scaling_model(4)
            plan = compile_plan(model, [scaling_spec()])
            layer = model.layers[0]
            layer.scale.data = torch.rand(6) + 0.5
            layer.weight.data = torch.rand(6)
            assert plan.run(strict=False).reallocated == ["layers.0.inv", "layers.0.prod"]
            assert bits_equal(plan.entries["layers.0.prod"].storage, layer.scale * layer.weight)
            plans.append(plan)
    assert plans[1].graph.stamped == 3
    assert _differences(*plans) == []


def _budget_issues(on: bool, monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, str, str]]:
    from derivgraph.errors import SpecValidationError
    from derivgraph.limits import LIMITS

    monkeypatch.setattr(LIMITS, "max_model_alloc_bytes", 300)  # crossed in the third layer
    with stamp.stamping(on), pytest.raises(SpecValidationError) as raised:
        compile_plan(scaling_model(5), [scaling_spec()])
    return [(i.rule, i.message, i.node) for i in raised.value.issues]


def test_a_budget_crossed_only_by_stamped_layers_is_reported_as_without_stamping(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Each layer holds 128 bytes (inv and prod 32 each, strides 64); the model's budget (300)
    is crossed at layer 2's prod, which took its template's value: the issue is the one the
    plain compile reports."""
    plain = _budget_issues(False, monkeypatch)
    assert [node for _, _, node in plain] == ["layers.2.prod"]
    assert _budget_issues(True, monkeypatch) == plain


def test_canary_budgets_taken_as_held_miss_the_crossing(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Planted bug: the totals are not summed (every budget taken as held), so the layers
    that took their template's values are never counted and the crossing goes unreported."""
    from derivgraph.limits import LIMITS

    monkeypatch.setattr(infer, "_within_budgets", lambda graph, env, stamped: True)
    monkeypatch.setattr(LIMITS, "max_model_alloc_bytes", 300)
    plan = compile_plan(scaling_model(5), [scaling_spec()])  # no SpecValidationError
    assert sum(e.storage.nbytes for n, e in plan.entries.items()
               if not n.endswith("alias")) == 640  # over the budget: the planted bug shows


class _Bound:
    """A stand-in lowering context: the tensors bound at each node id, no meta values."""

    def __init__(self, table: dict[str, torch.Tensor]):
        self.table, self.meta_env = table, {}

    def bound_values(self, refs: Any, missing: Any = None) -> list[Any]:
        return [self.table.get(r, missing) for r in refs]


@pytest.mark.parametrize("template_shares", [False, True], ids=["apart", "shared"])
def test_storage_sharing_is_compared_position_by_position(template_shares: bool) -> None:
    """Layer ``x`` shares storage between its two nodes as the template does or does not;
    layer ``y`` the other way. The column check and the layer check keep only ``x``."""
    from derivgraph.compiler.instances import InstanceTable
    from derivgraph.compiler.lower_layers import _columns_hold, layer_facts

    def pair(shared: bool) -> tuple[torch.Tensor, torch.Tensor]:
        base = torch.zeros(2, 4)
        return (base[0], base[1]) if shared else (torch.zeros(4), torch.zeros(4))

    table: dict[str, torch.Tensor] = {}
    for prefix, shared in (("t", template_shares), ("x", template_shares),
                           ("y", not template_shares)):
        table[f"{prefix}.a"], table[f"{prefix}.b"] = pair(shared)
    ctx = _Bound(table)
    template = ("t.a", "t.b")
    facts = layer_facts(ctx, template)
    assert (facts[1][4] == 0) is template_shares  # b's storage first seen at a
    x, y = ((f"{p}.a", f"{p}.b") for p in "xy")
    metas = [None, None]
    assert _columns_hold(ctx, InstanceTable(template, [x]), (), metas, facts)
    assert not _columns_hold(ctx, InstanceTable(template, [y]), (), metas, facts)
    assert not _columns_hold(ctx, InstanceTable(template, [x, y]), (), metas, facts)
    assert layer_facts(ctx, x) == facts and layer_facts(ctx, y) != facts


@pytest.mark.parametrize("case", ["scaling", "one-layer-unproven"])
def test_the_lowering_cuts_the_proven_rows_out_of_the_order_at_its_spans(
        case: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """The lowering's order without the proven rows is cut at the order's spans
    (:meth:`DerivedGraph.unspanned`) only where the proven tables are the ones the spans were
    made of (scaling: every row proven); the steps are the set filter's. Canary: planted once
    by hand, the lowering cutting at the spans for every closed table (not the proven ones)
    makes ``one-layer-unproven`` go red."""
    from derivgraph.compiler import lower

    plan = compile_plan(scaling_model(6) if case == "scaling" else _strided_stack(),
                        [scaling_spec() if case == "scaling" else _layer_spec()])
    cuts: list[bool] = []
    real = DerivedGraph.unspanned

    def spied(graph: Any, tables: Any) -> list[str] | None:
        rest = real(graph, tables)
        cuts.append(rest is not None)
        return rest

    monkeypatch.setattr(DerivedGraph, "unspanned", spied)
    cut = lower.lower_steps(plan.tensors)
    assert cuts == [case == "scaling"]
    monkeypatch.setattr(DerivedGraph, "unspanned", lambda graph, tables: None)
    filtered = lower.lower_steps(plan.tensors)
    assert cut.compact == filtered.compact
    assert list(cut.expanded()) == list(filtered.expanded())
    assert len(cut.expanded()) > len(cut.layers) > 0
    assert [t.rows for t in (layer.table for layer in cut.layers)] == \
        [t.rows for t in (layer.table for layer in filtered.layers)]
