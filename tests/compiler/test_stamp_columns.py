"""A template's facts proven over a column of layers (:func:`derivgraph.compiler.stamp_columns.
prove_rows`): a row it proves must get exactly what :func:`~derivgraph.compiler.stamp.facts_hold`
gives it (the objects the path probes found), and a row it does not prove takes the per-layer
path. Checked on columns mixing layers that differ from the template in one fact each (the
variants of ``test_stamp_facts``), and on whole compiles against stamping off. Canary: a
layout sweep planted to skip the dtype proves a row whose dtype differs.

The derived nodes of the rows whose params a template proved are made a declaration at a
time over the rows (``build._derived_columns``): the graph must be what the row-by-row loop
makes, node for node and in order, with the same issues; a taken name sends the rows down the
row-by-row path (canary: a column path blind to taken ids replaces the first declaration)."""

from __future__ import annotations

from typing import Any

import pytest
import torch

from derivgraph import DerivedTensor, Spec, Target, compile_plan
from derivgraph.compiler import build, stamp, stamp_columns
from derivgraph.compiler.bind import match_specs
from derivgraph.compiler.stamp import facts_hold, stamping
from derivgraph.compiler.stamp_columns import prove_columns, prove_rows
from derivgraph.errors import Rule
from derivgraph.tools.bench_scaling import scaling_model, scaling_spec

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


@pytest.mark.parametrize("variants", [["same"] * 5, list(_VARIANTS)], ids=["uniform", "mixed"])
def test_a_column_proof_gives_each_row_and_each_run_what_prove_rows_gives(
        variants: list[str]) -> None:
    """``prove_columns`` (the stamper's proof, kept as columns) gives the rows ``prove_rows``
    proves, each row's objects (``objects``) and a run's objects per probe (``columns``:
    what the column replay reads) as ``prove_rows``' dicts hold them."""
    reads, graph = _template(), _Graph()
    bounds = _column(variants)
    proven = prove_rows(graph, reads, bounds, [{}] * len(bounds))
    proof = prove_columns(graph, reads, bounds, [{}] * len(bounds))
    assert proof.rows == [i for i, got in enumerate(proven) if got is not None]
    assert proof.rows and proof.keys
    assert [proof.objects(k) for k in range(len(proof.rows))] == \
        [got for got in proven if got is not None]
    ks = list(range(len(proof.rows)))[::-1]
    columns = proof.columns(ks)
    assert list(columns) == list(proven[proof.rows[0]])
    for key, column in columns.items():
        assert [id(x) for x in column] == [id(proven[proof.rows[k]][key]) for k in ks]


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


def _graph_record(graph: Any) -> list[Any]:
    """What the derived-node loop leaves in a graph: the derived tensors in order with their
    fields, the IR's nodes and users in order, its version, and the issues."""
    derived = [(n.id, n.bound.module_path, n.decl.name, n.owner_path, n.device, n.params,
                n.input, n.kind) for n in graph.derived.values()]
    ir = graph.ir
    return [derived, [(n.id, n.kind, n.inputs) for n in ir.nodes.values()],
            list(ir.users.items()), ir.version, graph.params_stamped, graph.stamped,
            [(i.rule, i.message, i.node) for i in graph.issues]]


def _built(model: Any, specs: list[Any], columns: bool,
           monkeypatch: pytest.MonkeyPatch) -> tuple[list[Any], int]:
    """The record of ``build_graph`` with the derived nodes made by columns where they may
    be (``columns``) or row by row; and how many rows were made row by row."""
    made = []
    by_rows = build._derived_nodes

    def counted(*args: Any) -> Any:
        made.append(args[2].module_path)
        return by_rows(*args)

    with monkeypatch.context() as patch:
        patch.setattr(build, "_derived_nodes", counted)
        if not columns:
            patch.setattr(build, "_derived_columns", lambda *args: None)
        graph = build.build_graph(model, match_specs(model, specs))
    return _graph_record(graph), len(made)


def _taken_spec() -> Spec:
    """A spec on the stack (matched before its layers) declaring layer 3's ``inv``."""
    return Spec(name="taken", target=Target(module_class=["ScalingStack"]),
                derived=[DerivedTensor(name="inv", kind="attribute", owner="layers.3",
                                       formula="full([8], 2, dtype=int64)")])


@pytest.mark.parametrize("specs", [lambda: [scaling_spec()],
                                   lambda: [scaling_spec(), _taken_spec()],
                                   lambda: [_taken_spec(), scaling_spec()]],
                         ids=["one-spec", "a-name-taken", "a-name-taken-first"])
def test_derived_nodes_made_by_columns_are_what_rows_make(
        specs: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    model = scaling_model(12)
    by_columns, rows_made = _built(model, specs(), True, monkeypatch)
    by_rows, all_rows = _built(model, specs(), False, monkeypatch)
    assert by_columns == by_rows
    assert all_rows == 12 + len(specs()) - 1
    # the template's row, then the other 11 by columns unless a name is taken
    assert rows_made == (1 if len(specs()) == 1 else all_rows)


def test_a_taken_name_is_reported_as_today(
        monkeypatch: pytest.MonkeyPatch) -> None:
    model = scaling_model(4)
    record, _ = _built(model, [scaling_spec(), _taken_spec()], True, monkeypatch)
    issues = record[-1]
    assert [(rule, node) for rule, _, node in issues] == [(Rule.DUPLICATE, "layers.3.inv")]


def test_canary_columns_that_skip_the_taken_check_are_caught(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Planted bug: the column path never finds a taken id (the duplicate goes unreported and
    replaces the first declaration)."""
    made = build._derived_columns

    def planted(graph: Any, *args: Any) -> Any:
        with pytest.MonkeyPatch.context() as blind:  # the ids the column path reads: none
            blind.setattr(type(graph), "derived_ids", property(lambda g: {}.keys()))
            return made(graph, *args)

    model = scaling_model(4)
    by_rows, _ = _built(model, [scaling_spec(), _taken_spec()], False, monkeypatch)
    monkeypatch.setattr(build, "_derived_columns", planted)
    planted_record, _ = _built(model, [scaling_spec(), _taken_spec()], True, monkeypatch)
    assert planted_record != by_rows  # the planted bug shows


def _device_spec() -> Spec:
    """A spec whose tensor's device is read from the layer's ``weight`` (not a param fact)."""
    return Spec(name="dev", target=Target(module_class=["ScalingLayer"]),
                params={"E": "scale.shape[0]"},
                derived=[DerivedTensor(name="inv", kind="attribute", formula="1.0 / scale",
                                       device="weight")])


def _device_model() -> Any:
    model = scaling_model(6)
    model.layers[3].weight = torch.nn.Parameter(torch.rand(8, device="meta"),
                                                requires_grad=False)
    return model


def test_a_run_shares_one_key_only_where_its_devices_agree(
        monkeypatch: pytest.MonkeyPatch) -> None:
    model = _device_model()
    by_columns, rows_made = _built(model, [_device_spec()], True, monkeypatch)
    by_rows, _ = _built(model, [_device_spec()], False, monkeypatch)
    assert rows_made == 1 and by_columns == by_rows
    assert [n[4].type for n in by_rows[0]] == ["cpu"] * 3 + ["meta"] + ["cpu"] * 2
    assert by_rows[5] == 4  # layer 3 (another device: another key) is not stamped


def test_canary_a_run_sharing_its_key_across_devices_is_caught(
        monkeypatch: pytest.MonkeyPatch) -> None:
    made = build._derived_columns

    def planted(*args: Any) -> Any:
        found = made(*args)
        return None if found is None else (True, found[1])  # one key, devices unread

    model = _device_model()
    by_rows, _ = _built(model, [_device_spec()], False, monkeypatch)
    monkeypatch.setattr(build, "_derived_columns", planted)
    planted_record, _ = _built(model, [_device_spec()], True, monkeypatch)
    assert planted_record != by_rows  # the planted bug shows
