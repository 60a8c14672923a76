"""The bound sources (``Holders._sources``) keep the startup record's own per-source lists
(``Plan.source_ptrs``: the paths and addresses the compile read), and a compact lowering's
written targets are its order list, not copies: every per-row list a plan keeps is walked by
the collector's first young collection after the compile (about 13 ns a reference at 100k),
so a copy costs twice (made, then walked). Canary: the values are the sources' own (paths,
tensors and addresses equal, row by row, those read from the model independently), the
lists are the very objects named, and the compiled plan still refills to eager's values and
sees a source re-pointed."""

from __future__ import annotations

import pickle

import pytest
import torch

from derivgraph import compile_plan
from derivgraph.compiler.graph import HeldDerived, Same
from derivgraph.compiler.lower import WRITES, LoweredSteps
from derivgraph.tools.bench_scaling import scaling_model, scaling_spec
from tests.fixtures.scaling_refill import assert_refill_matches_eager

LAYERS = 12


def _plan():
    torch.manual_seed(0)
    model = scaling_model(LAYERS)
    return model, compile_plan(model, [scaling_spec()])


def test_bound_sources_keep_the_startup_records_lists() -> None:
    model, plan = _plan()
    bound = plan.holders._sources
    record = plan.source_ptrs
    # real values, read independently of the compile
    expected = [f"layers.{i}.{name}" for i in range(LAYERS) for name in ("weight", "scale")]
    assert sorted(bound.paths) == sorted(expected)
    assert bound.paths == plan.graph.sources()
    for path, tensor, ptr in zip(bound.paths, bound.tensors, bound.ptrs):
        owner, _, name = path.rpartition(".")
        assert tensor is getattr(model.get_submodule(owner), name), path
        assert ptr == tensor.data_ptr(), path
    assert list(record.ptrs) == bound.ptrs
    assert record.ids == list(map(id, bound.tensors))
    # the very lists: the record's paths and addresses (no fold: the record is the sources')
    assert bound.paths is record.paths
    assert bound.ptrs is record.ptrs
    # the plan the compile made is a working one: a source changed in place refills to
    # eager's values; a source re-pointed is seen
    assert_refill_matches_eager(model, plan, LAYERS, 1.5, strides=False)
    assert plan.holders.sources_intact()
    model.layers[3].weight.data = model.layers[3].weight.data.clone()
    assert not plan.holders.sources_intact()
    # the shared lists still hold what was bound (nothing wrote them)
    assert bound.paths is record.paths and bound.ptrs is record.ptrs
    assert record.ptrs == [t.data_ptr() if p != "layers.3.weight" else record.ptrs[i]
                           for i, (p, t) in enumerate(zip(bound.paths, bound.tensors))]


def test_a_compact_lowerings_written_targets_are_its_order() -> None:
    _model, plan = _plan()
    steps = plan.programs.lowered
    assert isinstance(steps, LoweredSteps) and steps.compact
    written = steps.written()
    # real values: the targets of the expanded steps that write
    assert written == [s.target for s in steps.expanded() if s.action in WRITES]
    assert written == [f"layers.{i}.{name}" for i in range(LAYERS) for name in ("inv", "prod")]
    # the very list: the order list (read only), a copy handed out each call
    assert steps._written is steps._order
    written.append("not.a.node")
    written[0] = "changed"
    again = steps.written()
    assert again is not steps._written
    assert again == [s.target for s in steps.expanded() if s.action in WRITES]


def test_a_held_columns_field_set_for_every_row_holds_one_value() -> None:
    model, plan = _plan()
    held = [c.nodes for c in plan.entries.columns if type(c.nodes) is HeldDerived]
    assert len(held) == 4
    for column in held:
        assert type(column.metas) is Same and type(column.devices) is Same
        assert len(column.metas) == len(column.devices) == len(column.ids) == LAYERS - 1
        name = column.ids[0].rsplit(".", 1)[1]
        # real values: the template row's (layer 0, its own node) meta and device
        template = plan.graph.derived_node(f"layers.0.{name}")
        assert column.metas.value is template.meta
        assert column.devices.value == torch.device("cpu") == template.device
        eager = getattr(model.layers[0], name)
        assert template.meta.shape == eager.shape and template.meta.dtype == eager.dtype
    # every row's node, made from the column, takes them (as ``[value] * n`` gave)
    for column in held:
        for node_id, node in zip(column.ids, column.nodes()):
            assert node.id == node_id
            assert node.meta is column.metas.value
            assert node.device == torch.device("cpu")


def test_same_reads_as_the_list() -> None:
    value = object()
    for n in (0, 1, 5):
        same, listed = Same(value, n), [value] * n
        assert len(same) == n and list(same) == listed and same == listed
        assert [same[i] for i in range(-n, n)] == [listed[i] for i in range(-n, n)]
        for i in (n, -n - 1):
            with pytest.raises(IndexError):
                same[i]
        for cut in (slice(None), slice(1, 3), slice(None, None, -2), slice(7, 9)):
            assert same[cut] == listed[cut]
        assert same.count(value) == n and (value in same) == bool(n)
        again = pickle.loads(pickle.dumps(Same(torch.device("cpu"), n)))
        assert again == [torch.device("cpu")] * n
    assert Same(1, 3) != [1, 1] and Same(1, 3) != Same(2, 3) and Same(1, 3) == Same(1, 3)
