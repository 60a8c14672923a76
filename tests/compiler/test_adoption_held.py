"""Adoption reads a held column (``graph.HeldDerived``) as a column
(:func:`~derivgraph.adoption_columns.column_rows`): its rows' nodes, owner paths and inputs
equal, field by field, what the per-row path reads from ``graph.derived``, the nodes the
same objects the dict gets later; the compile then puts no held row in ``graph.derived``'s
dict. Canaries: a held column of another declaration is refused (the check made once per
column), a list that is not exactly a held column's ids finds none, and the plan with the
held reads equals the plan made after ``graph.derived`` was read (every row one by one)."""

from __future__ import annotations

from typing import Any

import torch

import derivgraph.adoption as adoption
from derivgraph import compile_plan
from derivgraph.adoption_columns import column_rows
from derivgraph.compiler import build
from derivgraph.compiler.bind import match_specs
from derivgraph.compiler.graph import DerivedGraph, DerivedNode, HeldDerived
from derivgraph.compiler.layers import closed_layers
from derivgraph.compiler.stamp import stamping
from derivgraph.tools.bench_scaling import scaling_model, scaling_spec


def _fields(node: DerivedNode) -> tuple[Any, ...]:
    meta = node.meta
    return (node.id, node.bound.module_path, node.decl, node.owner_path, node.input,
            node.device, node.params, node.kind,
            None if meta is None else (tuple(meta.shape), meta.dtype, meta.device.type))


def _graph(layers: int) -> DerivedGraph:
    model = scaling_model(layers)
    with stamping(True):
        return build.build_graph(model, match_specs(model, [scaling_spec()]))


def _columns(graph: DerivedGraph) -> list[tuple[list[str], Any]]:
    """Each stamped table column's ids and its template node's declaration."""
    return [(table.column(k), node.decl)
            for table in closed_layers(graph) for k, template in enumerate(table.template)
            if (node := graph.derived_node(template)) is not None]


def test_a_held_column_reads_as_the_rows_read_one_by_one() -> None:
    held_graph, plain_graph = _graph(9), _graph(9)
    columns = _columns(held_graph)
    assert len(columns) == 4 and len(held_graph.held_columns()) == 4
    held = [column_rows(held_graph, ids, decl) for ids, decl in columns]
    assert all(held_graph.held_column(ids) is not None for ids, _ in columns)
    assert plain_graph.derived  # the dict made: no held column left, every row read one by one
    assert all(plain_graph.held_column(ids) is None for ids, _ in _columns(plain_graph))
    plain = [column_rows(plain_graph, ids, decl) for ids, decl in _columns(plain_graph)]
    for got, want in zip(held, plain, strict=True):
        assert got is not None and want is not None
        # a held column stands for its nodes, none made by the read (entry72: made on first
        # read of an entry's node); the per-row read gives the nodes
        assert isinstance(got[0], HeldDerived) and got[0].made is None
        assert isinstance(want[0], list)
        assert [_fields(n) for n in got[0].nodes()] == [_fields(n) for n in want[0]]
        assert got[1:] == want[1:]
        assert len(got[1]) == 8 and got[1][0] == "layers.1"
    # the nodes made are the ones the dict gets when it is read
    assert all(node is held_graph.derived[node.id] for rows in held for node in rows[0].nodes())


def test_canary_a_held_column_of_another_declaration_is_refused() -> None:
    graph = _graph(5)
    (ids, decl), (other_ids, other) = _columns(graph)[:2]
    assert decl is not other
    assert column_rows(graph, ids, decl) is not None
    assert graph.held_column(ids) is not None
    assert column_rows(graph, ids, other) is None  # the one declaration, checked once


def test_canary_held_column_needs_exactly_its_ids() -> None:
    graph = _graph(5)
    ids, _ = _columns(graph)[0]
    assert graph.held_column(ids) is not None
    assert graph.held_column(ids[:-1]) is None
    assert graph.held_column(ids[::-1]) is None
    assert graph.held_column([]) is None


def _entries(plan: Any) -> list[tuple[Any, ...]]:
    out = []
    for node_id, entry in plan.entries.items():
        s = entry.storage
        out.append((node_id, _fields(entry.node), entry.slot, entry.adopted,
                    (tuple(s.shape), s.dtype) if isinstance(s, torch.Tensor) else s))
    return out


def test_the_compile_with_held_reads_plans_as_with_the_dict_read_first(monkeypatch) -> None:  # noqa: ANN001
    """The plan made with the held columns read as columns equals the plan made where
    adoption reads ``graph.derived`` first (every held row in the dict: the per-row path);
    the held compile puts no held row in the dict, and its entries' nodes are the ones the
    dict gets when it is read."""
    with stamping(True):
        held = compile_plan(scaling_model(9), [scaling_spec()])
    assert held.graph.held_columns()  # no compile reader put a held row in the dict
    real = adoption.adopt_or_allocate

    def dict_first(plan: Any, *args: Any, **kwargs: Any) -> Any:
        assert plan.graph.derived  # every held row in the dict: adoption reads them one by one
        return real(plan, *args, **kwargs)

    monkeypatch.setattr(adoption, "adopt_or_allocate", dict_first)
    import derivgraph.planner as planner
    monkeypatch.setattr(planner, "adopt_or_allocate", dict_first)
    with stamping(True):
        plain = compile_plan(scaling_model(9), [scaling_spec()])
    assert not plain.graph.held_columns()
    assert _entries(held) == _entries(plain)
    assert len(_entries(held)) == 36
    assert all(entry.node is held.graph.derived[node_id]
               for node_id, entry in held.entries.items())
