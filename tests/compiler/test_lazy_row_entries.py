"""The entries of a held column's rows (:class:`~derivgraph.runtime.entry.RowEntry`) make
their node only where it is first read: a compile, ``plan.prepare``, a run and a refill of
a stamped stack read none (their readers take ids, owner paths, kinds and inputs from the
entries' own fields and the columns), and a node made later is the very node the graph
holds. Canary: every model below compiled with the held columns read (lazy rows) and with
``graph.derived`` read first (every row's entry made with its node, the per-row path)
gives the same entries, field by field, the same holder table and constant entries."""

from __future__ import annotations

from typing import Any

import pytest
import torch

import derivgraph.adoption as adoption
import derivgraph.planner as planner
from derivgraph import DerivedTensor, Spec, Target, compile_plan
from derivgraph.compiler.graph import DerivedNode, HeldDerived
from derivgraph.compiler.stamp import stamping
from derivgraph.paths import Slot
from derivgraph.runtime.entry import ColumnRows, Entry, RowEntry, keeps_startup
from derivgraph.runtime.entry_columns import EntryColumn
from derivgraph.tools.bench_scaling import scaling_model, scaling_spec
from tests.compiler.scaling_variants import spec_with_generic_rows
from tests.toy import ToyStack

_NODE = Entry.__dict__["node"]  # the slot itself: reading it never makes a node


def _made(entry: Entry) -> bool:
    try:
        _NODE.__get__(entry, type(entry))
    except AttributeError:
        return False
    return True


def _toy_spec() -> Spec:
    return Spec(name="t", target=Target(module_class=["Toy"]), derived=[
        DerivedTensor(name="inv", kind="attribute", formula="reciprocal(scale)"),
        DerivedTensor(name="sq", kind="attribute", formula="weight * 2.0"),
        DerivedTensor(name="m", kind="scalar", formula="amax(scale)"),
        DerivedTensor(name="scale_alias", kind="alias", of="scale"),
        DerivedTensor(name="held_inv", kind="attribute", formula="inv * 3.0", owner="holder")])


MODELS = {
    "scaling": (lambda: scaling_model(9), scaling_spec),
    "generic_rows": (lambda: scaling_model(9), spec_with_generic_rows),
    "toy": (lambda: ToyStack(6), _toy_spec),
}


def _fields(node: DerivedNode) -> tuple[Any, ...]:
    meta = node.meta
    return (node.id, node.bound.module_path, node.decl, node.owner_path, node.input,
            node.device, node.params, node.kind,
            None if meta is None else (tuple(meta.shape), meta.dtype, meta.device.type))


def _entries(plan: Any) -> list[tuple[Any, ...]]:
    out = []
    for node_id, entry in plan.entries.items():
        s = entry.storage
        out.append((node_id, entry.id, entry.owner_path, _fields(entry.node), entry.slot,
                    entry.adopted, entry.startup_ptr != 0,
                    (tuple(s.shape), s.dtype) if isinstance(s, torch.Tensor) else s))
    return out


def _compile(name: str) -> Any:
    model, spec = MODELS[name]
    with stamping(True):
        return compile_plan(model(), [spec()])


def _eager(name: str, monkeypatch: pytest.MonkeyPatch) -> Any:
    """The plan made where adoption reads ``graph.derived`` first: no held column is left,
    every row's entry is an :class:`Entry` made with its node (the per-row path)."""
    real = adoption.adopt_or_allocate

    def dict_first(plan: Any, *args: Any, **kwargs: Any) -> Any:
        assert plan.graph.derived
        return real(plan, *args, **kwargs)

    with monkeypatch.context() as patch:
        patch.setattr(adoption, "adopt_or_allocate", dict_first)
        patch.setattr(planner, "adopt_or_allocate", dict_first)
        return _compile(name)


def test_no_row_node_is_made_through_compile_prepare_run_refill() -> None:
    """(The other models' graphs hold no column by adoption: their rows are plain entries.)"""
    plan = _compile("scaling")
    rows = [e for e in plan.entries.values() if type(e) is RowEntry]
    assert len(rows) == 4 * 8  # inv, prod, strides, scale_alias of the 8 stamped layers
    held = plan.graph.held_columns()
    assert len(held) >= 4
    for step in (plan.prepare, plan.run, plan.refill, plan.run):
        step()
        assert not any(map(_made, rows))
        assert all(column.made is None for column in held)
    # a node read now is the column's, the very node the graph holds
    first = rows[0]
    assert first.node is plan.graph.derived[first.id]
    assert all(map(_made, rows[:1])) and first.column.made is not None
    assert all(e.node is plan.graph.derived[e.id] for e in rows)


@pytest.mark.parametrize("name", sorted(MODELS))
def test_lazy_rows_equal_the_eager_entries(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    lazy, eager = _compile(name), _eager(name, monkeypatch)
    assert not any(type(e) is RowEntry for e in eager.entries.values())
    assert any(type(e) is RowEntry for e in lazy.entries.values()) == (name == "scaling")
    assert lazy.constant_entries == eager.constant_entries
    assert lazy.holders.table.id_list == eager.holders.table.id_list
    assert keeps_startup(lazy.entries.values()) == keeps_startup(eager.entries.values())
    assert [(type(c), c.ids, c.inputs()) for c in lazy.entries.columns] == \
        [(type(c), c.ids, c.inputs()) for c in eager.entries.columns]
    assert _entries(lazy) == _entries(eager)  # every lazy node made here, by its read
    for plan in (lazy, eager):  # each entry's own id and owner path are its node's
        assert all(e.id == e.node.id and e.owner_path == e.node.owner_path
                   for e in plan.entries.values())
        assert all(e.node is plan.graph.derived[i] for i, e in plan.entries.items())


def test_a_column_reads_its_rows_inputs_as_their_nodes_have_them() -> None:
    """:meth:`EntryColumn.inputs` of a held column: the column's inputs before its nodes are
    made, the nodes' after (an input written to the made nodes is read). Canary: a column
    whose ``inputs`` list were read after its nodes are made would answer the old inputs."""
    plan = _compile("scaling")
    columns = [c for c in plan.entries.columns if c.nodes is not None]
    assert columns and all(type(c.nodes) is HeldDerived for c in columns)
    column = next(c for c in columns if c.nodes.inputs is not None)
    before = column.inputs()
    assert column.nodes.made is None and None not in before
    nodes = column.nodes.nodes()
    nodes[0].input = "changed"
    assert column.inputs() == ["changed", *before[1:]]
    assert column.inputs() == [e.node.input for e in column.entries]


def test_canary_a_plain_entry_column_reads_its_entries_nodes() -> None:
    """A column with no held column behind it (``nodes`` None) reads each entry's node."""
    plan = _compile("scaling")
    column = plan.entries.columns[0]
    plain = EntryColumn(column.template, column.name, column.ids, column.entries,
                        column.owners, None, column.paths)
    assert plain.nodes is None
    assert all(map(_made, plain.entries)) is False
    assert plain.inputs() == [e.node.input for e in column.entries]
    assert all(map(_made, plain.entries))


def test_row_entries_are_the_columns_rows_in_order() -> None:
    plan = _compile("scaling")
    held = plan.graph.held_columns()[0]
    entries = list(ColumnRows(held, Slot.ATTRIBUTE))
    assert [e.id for e in entries] == held.ids and [e.owner_path for e in entries] == held.paths
    assert [e.row for e in entries] == list(range(len(held)))
    assert not any(map(_made, entries)) and held.made is None
    assert [e.node for e in entries] == held.nodes()
    assert all(a is b for a, b in zip([e.node for e in entries], held.nodes(), strict=True))
    with pytest.raises(AttributeError):
        entries[0].no_such_field  # noqa: B018 (only ``node`` is made on a read)
