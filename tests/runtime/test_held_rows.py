"""A compile makes no entry object per held column row: adoption hands the entry columns
their rows as a :class:`~derivgraph.runtime.entry.ColumnRows` (a row's
:class:`~derivgraph.runtime.entry.RowEntry` made where a reader asks for it, and kept), the
entry table's ``by_id`` is a :class:`~derivgraph.runtime.entry.HeldRows` from the fill on,
and the compile's readers take the columns. Canary: every answer equals, field by field,
the plan compiled with every row's entry made up front (the per-entry path before), and a
compile, run, refill and run make none of them (a class counter)."""

from __future__ import annotations

import gc
from typing import Any

import pytest
import torch

import derivgraph.adoption_columns as adoption_columns
from derivgraph import compile_plan
from derivgraph.runtime.entry import ColumnRows, HeldEntries, HeldRows, RowEntry, keeps_startup
from derivgraph.runtime.entry_columns import EntryColumn
from derivgraph.runtime.plan import Plan
from derivgraph.tools.bench_scaling import scaling_model, scaling_spec

LAYERS = 9


def _compile(by_column: bool = True, layers: int = LAYERS) -> Plan:
    """The scaling stack compiled; ``by_column`` False: every held row's entry made by
    adoption up front (a list: the per-entry path the compile took before)."""
    torch.manual_seed(0)
    model = scaling_model(layers)
    if by_column:
        return compile_plan(model, [scaling_spec()])
    keep = adoption_columns._entries

    def made(nodes: Any, storages: Any, slot: Any) -> Any:
        rows = keep(nodes, storages, slot)
        return list(rows) if type(rows) is ColumnRows else rows

    adoption_columns._entries = made  # type: ignore[assignment]
    try:
        return compile_plan(model, [scaling_spec()])
    finally:
        adoption_columns._entries = keep  # type: ignore[assignment]


class _Count:
    """How many :class:`RowEntry` are made while counting (the class's ``__init__``)."""

    def __init__(self) -> None:
        self.made = 0
        self._keep = RowEntry.__init__

    def __enter__(self) -> _Count:
        keep = self._keep

        def init(entry: RowEntry, *args: Any) -> None:
            self.made += 1
            keep(entry, *args)

        RowEntry.__init__ = init  # type: ignore[method-assign]
        return self

    def __exit__(self, *exc: Any) -> None:
        RowEntry.__init__ = self._keep  # type: ignore[method-assign]


def _alive_rows(plan: Plan) -> int:
    """How many row entries of ``plan``'s held columns are alive (made and kept)."""
    nodes = {id(c.nodes) for c in plan.entries.columns if c.nodes is not None}
    gc.collect()
    return sum(1 for o in gc.get_objects()
               if type(o) is RowEntry and id(RowEntry.column.__get__(o)) in nodes)


def test_a_compile_makes_no_row_entry() -> None:
    with _Count() as count:
        plan = _compile()
    assert count.made == 0
    rows = plan.entries.by_id
    assert type(rows) is HeldRows and len(rows) == len(plan.entries) == 4 * LAYERS
    assert plan.tensors.entries is rows and plan.holders.entries is rows
    assert plan.programs.entries is rows and type(plan.holders.table.entries) is HeldEntries
    held = [c for c in plan.entries.columns if type(c.entries) is ColumnRows]
    assert len(held) == 4 and sum(map(len, held)) == 4 * (LAYERS - 1)
    assert all(c.entries.column is c and not c.entries.made for c in held)
    assert _alive_rows(plan) == 0
    # a run, a refill and a run ask for no row's entry either (their readers take columns)
    with _Count() as count:
        reports = [plan.run(), plan.refill(), plan.run()]
    assert count.made == 0 and _alive_rows(plan) == 0
    with _Count() as count:
        kept = _compile(by_column=False)
    assert count.made == 4 * (LAYERS - 1)
    assert type(kept.entries.by_id) is dict and _alive_rows(kept) == 4 * (LAYERS - 1)
    again = [kept.run(), kept.refill(), kept.run()]
    assert [(r.steps, r.written, r.bytes) for r in reports] == \
        [(r.steps, r.written, r.bytes) for r in again]
    assert reports[0].bytes > 0


def _relayout(plan: Plan) -> None:
    """Layer 3's sources replaced by tensors of another shape, then a run (a relayout: the
    plan opens its columns)."""
    layer = plan.model.layers[3]
    torch.manual_seed(1)
    layer.scale = torch.nn.Parameter(torch.rand(9) + 0.5, requires_grad=False)
    layer.weight = torch.nn.Parameter(torch.rand(9), requires_grad=False)
    plan.run(strict=False)


def _fields(plan: Plan, key: str) -> tuple[Any, ...]:
    e = plan.entries[key]
    owner = plan.model.get_submodule(e.owner_path)
    alias = e.startup_alias()
    return (type(e).__name__, e.id, e.owner_path, e.slot, e.adopted, e.node.id,
            e.node.decl.name, e.storage.tolist(), e.nbytes(),
            owner.__dict__.get(e.node.decl.name, getattr(owner, e.node.decl.name))
            is e.storage, e.startup_ptr == e.storage.data_ptr(),
            None if alias is None else (alias.tolist(), alias.data_ptr() == e.startup_ptr,
                                        alias is not e.storage))


def test_every_row_answers_as_the_kept_entry_did() -> None:
    held, kept = _compile(), _compile(by_column=False)
    assert list(held.entries) == list(kept.entries)
    for key in kept.entries:
        assert _fields(held, key) == _fields(kept, key), key
    assert keeps_startup(held.entries.values()) == keeps_startup(kept.entries.values())
    assert list(held.declared()) == list(kept.declared())
    # the holder table's columns, as the per-entry plan's
    a, b = held.holders.table, kept.holders.table
    assert a.id_list == b.id_list and a.keys == b.keys and a.fast == b.fast
    assert [x.tolist() for x in a.storages] == [x.tolist() for x in b.storages]
    assert [x.data_ptr() for x in a.storages] == a.ptrs


def test_a_row_asked_for_is_one_object_wherever_it_is_read() -> None:
    plan = _compile()
    rows, table = plan.entries.by_id, plan.holders.table
    key = "layers.4.prod"
    assert key in plan.entries and plan.entries.get("layers.99.prod", 7) == 7
    with pytest.raises(KeyError):
        plan.entries["layers.99.prod"]
    entry = plan.entries[key]
    assert plan.entries[key] is entry and rows.get(key) is entry
    at = table.id_list.index(key)
    assert table.entries[at] is entry
    column = next(c for c in plan.entries.columns if key in c.ids)
    assert column.entries[column.ids.index(key)] is entry
    assert rows.storage(key) is entry.storage
    assert table.entries[at:at + 1] == [entry] and len(table.entries) == len(rows)


def test_a_made_row_is_read_from_its_entry() -> None:
    plan = _compile()
    rows = plan.entries.by_id
    column = plan.entries.columns[0]
    assert type(column.entries) is ColumnRows
    at = plan.entries.rows[0][0].start
    changed = column.entries[2]
    pos = range(len(rows))[plan.entries.rows[0][0]][2]
    assert rows.read("startup_data")[pos] is changed.startup_data is column.startup
    alias = changed.startup_alias()  # its startup data is now its own alias, not the record
    assert rows.read("startup_data")[pos] is alias
    assert column.entries.read("startup_data")[2] is alias
    assert column.entries.read("startup_data")[3] is column.startup
    assert rows.read("storage")[at] is column.storages[0]
    changed.storage = torch.zeros(3)
    assert rows.storage(changed.id) is changed.storage is rows.read("storage")[pos]
    assert plan.entries[changed.id] is changed


def test_a_row_made_before_its_column_writes_is_written_again() -> None:
    keep = EntryColumn.allocate
    early: list[Any] = []

    def allocate(self: EntryColumn, *args: Any, **kwargs: Any) -> None:
        if type(self.entries) is ColumnRows:
            early.append(self.entries[1])  # made holding no storage yet
            assert early[-1].storage is None and early[-1].startup_ptr == 0
        keep(self, *args, **kwargs)

    EntryColumn.allocate = allocate  # type: ignore[method-assign]
    try:
        plan = _compile()
    finally:
        EntryColumn.allocate = keep  # type: ignore[method-assign]
    kept = _compile(by_column=False)
    assert len(early) == 3  # the three allocated columns (the alias column allocates none)
    for entry in early:
        assert plan.entries[entry.id] is entry
        assert _fields(plan, entry.id) == _fields(kept, entry.id)
        assert entry.startup_data is not None and entry.startup_ptr != 0


def test_a_relayout_after_the_rows_are_held_makes_them_generic() -> None:
    held, kept = _compile(), _compile(by_column=False)
    for plan in (held, kept):
        _relayout(plan)
    assert held.entries.columns == () and type(held.entries.by_id) is HeldRows
    assert held.entries["layers.3.prod"].storage.shape == (9,)
    for key in kept.entries:
        assert _fields(held, key) == _fields(kept, key), key


def test_a_column_recorded_row_by_row_gives_each_row_its_own_data() -> None:
    """A column whose startup record is one alias per row (no layout record: ``book`` None)
    gives each row's entry its own, made before or after the record."""
    plan = _compile()
    column = plan.entries.columns[0]
    rows = column.entries
    assert type(rows) is ColumnRows
    before = rows[1]  # made under the column's one record
    column.record_startup(None)
    assert type(column.startup) is list and column.kept is True
    after = rows[4]
    for row, entry in ((1, before), (4, after)):
        data = entry.startup_data
        assert data is column.startup[row] and data is not column.startup[row - 1]
        assert torch.equal(data, column.storages[row]) and data is not column.storages[row]
        assert data.data_ptr() == entry.startup_ptr == column.storages[row].data_ptr()
    assert rows.read("startup_data") == column.startup


def test_the_keys_are_disjoint_as_the_ids_are() -> None:
    plan = _compile()
    rows = plan.entries.by_id
    ids = set(plan.entries)
    column = plan.entries.columns[1]
    template = next(iter(plan.entries.generic))
    for refs in ([*column.ids], [column.ids[-1]], [template], ["layers.3.scale", template],
                 ["layers.3.scale", "layers.4.weight"], [], ["no.such"]):
        assert rows.keys().isdisjoint(refs) is ids.isdisjoint(refs), refs
        assert rows.keys().isdisjoint(iter(refs)) is ids.isdisjoint(refs), refs
    assert not column.entries.made  # no row's entry made to answer


def test_each_id_finds_its_row_by_its_position() -> None:
    """The ids' one index (id -> position in the table's order) and the columns' spans find
    each row: every id of every column answers its own row's entry, a generic id its kept
    entry, an id of nothing a miss (no row made but those asked for)."""
    plan = _compile()
    rows = plan.entries.by_id
    assert type(rows) is HeldRows
    for column in plan.entries.columns:
        assert type(column.entries) is ColumnRows
        for row, key in enumerate(column.ids):
            assert key in rows and rows.storage(key) is column.storages[row], key
            assert rows[key] is column.entries[row] and rows[key].id == key, key
            assert rows.get(key) is column.entries[row], key
            assert rows[key].node.id == column.nodes.ids[row], key
    for key, entry in plan.entries.generic.items():
        assert rows[key] is entry and rows.get(key) is entry
    for key in ("no.such", "layers.3.scale", "layers.3.weight"):
        assert key not in rows and rows.get(key, "gone") == "gone"
        with pytest.raises(KeyError):
            rows[key]


def test_the_keys_are_disjoint_as_the_ids_are_after_a_relayout() -> None:
    """Once every row is kept (a relayout opened the columns), the kept ids answer."""
    plan = _compile()
    column = plan.entries.columns[2]
    _relayout(plan)
    assert plan.entries.columns == () and type(plan.entries.by_id) is HeldRows
    rows, ids = plan.entries.by_id, set(plan.entries)
    for refs in ([*column.ids], [column.ids[-1]], ["layers.3.scale"], ["no.such"], []):
        assert rows.keys().isdisjoint(refs) is ids.isdisjoint(refs), refs


def test_the_table_takes_the_held_columns_spans(monkeypatch: pytest.MonkeyPatch) -> None:
    """``set_columns`` takes each held column's span as ``hold`` found it (no second search),
    equal to the spans found afresh."""
    import derivgraph.runtime.entry as entry_module

    calls: list[int] = []
    keep = entry_module.span_of

    def counted(ids: Any, rows: Any) -> Any:
        calls.append(len(rows))
        return keep(ids, rows)

    monkeypatch.setattr(entry_module, "span_of", counted)
    plan = _compile()
    table = plan.entries
    assert len(table.columns) == 4 and len(calls) == 4  # hold's search only
    ids = list(table)
    fresh = [(span, column) for column in table.columns
             if (span := keep(ids, column.ids)) is not None]
    assert [(s.start, s.stop, s.step) for s, _ in table.rows] \
        == [(s.start, s.stop, s.step) for s, _ in fresh]
    assert [c for _, c in table.rows] == [c for _, c in fresh]
    for span, column in table.rows:
        assert ids[span] == column.ids


def test_the_graph_s_derived_ids_answer_for_the_keys() -> None:
    """The compile's table answers ``in``, ``isdisjoint`` and a miss by the graph's derived
    ids (its keys: as many, each a derived tensor's), no ids' index made; a row asked for by
    its id makes it. Given ids that are not its keys (fewer), it makes its index instead:
    each answer the same."""
    plan = _compile()
    rows = plan.entries.by_id
    ids = list(plan.entries)
    assert type(rows) is HeldRows and rows._derived is not None
    for key in ("no.such", "layers.3.scale", "%4:div"):
        assert key not in rows and rows.get(key) is None
    assert rows.keys().isdisjoint(["layers.3.scale", "no.such"])
    assert not rows.keys().isdisjoint(["layers.3.scale", ids[-1]])
    assert all(key in rows for key in ids)
    assert rows._index is None  # nothing made to answer so far
    column = plan.entries.columns[3]
    assert rows[column.ids[2]] is column.entries[2] and rows._index is not None
    # a table given other ids than its keys (fewer) does not take them
    spans = list(rows._spans)
    other = HeldRows(ids, dict(rows._kept), spans, set(ids[:-1]))
    assert other._derived is None
    assert ids[-1] in other and not other.keys().isdisjoint([ids[-1]])
    assert other[ids[-1]] is rows[ids[-1]]
    assert rows.get(ids[-1]) is rows[ids[-1]]
    # derived ids that stop being as many as the keys (a graph grown since) answer no more
    grown = {*ids, "layers.99.inv"}
    late = HeldRows(ids, dict(rows._kept), spans, set(ids))
    assert late._derived is not None
    late._derived = grown
    assert "layers.99.inv" not in late and late.get("layers.99.inv") is None
    assert late.keys().isdisjoint(["layers.99.inv"])
