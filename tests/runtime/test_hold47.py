"""hold47: the holders' bind takes the compile's proven entry columns.

:func:`~derivgraph.runtime.entry_columns.held_columns` proves which bound entry columns the
rebind that follows them cannot reach (no other entry of the column's name on one of its
owners), and :func:`~derivgraph.runtime.accessors.holders_of` takes such a column's holders
(each owner's ``__dict__``) without reading the registries, where the owner walk finds the
column's own owners. Each rule is checked against the reading it replaces.
"""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest
import torch
from torch import nn

from derivgraph import planner
from derivgraph.compiler.owners import PathReader
from derivgraph.compiler.stamp import stamping
from derivgraph.runtime import entry_columns
from derivgraph.runtime.accessors import holders_of
from derivgraph.tools.bench_scaling import scaling_model, scaling_spec
from tests.runtime.conftest import at_entry_columns


def _compiled(monkeypatch: pytest.MonkeyPatch) -> tuple[Any, dict[str, Any]]:
    """A stamped 6-layer plan, with what the compile gave and got from ``held_columns``."""
    kept: dict[str, Any] = {}
    real = entry_columns.held_columns

    def keep(columns: Any, others: Any, owners: PathReader) -> Any:
        kept["columns"], kept["others"] = columns, others
        kept["held"] = real(columns, others, owners)
        return kept["held"]

    monkeypatch.setattr(planner, "held_columns", keep)
    with stamping(True):
        plan = planner.compile_plan(scaling_model(6), [scaling_spec()])
    return plan, kept


def _ids(located: tuple[list, list, list]) -> tuple[list, list, list]:
    return [id(d) for d in located[0]], located[1], located[2]


def test_the_compile_takes_every_column_and_binds_the_table_the_registries_give(
        monkeypatch: pytest.MonkeyPatch) -> None:
    plan, kept = _compiled(monkeypatch)
    assert len(kept["held"]) == len(kept["columns"]) == 4  # three attributes and an alias
    assert {c[0] for c in kept["held"]} == {"inv", "prod", "strides", "scale_alias"}
    table, objects = plan.holders.table, plan.holders.hops.objects
    want = _ids(holders_of(objects, plan.model, table.entries))  # every owner's registries
    assert ([id(d) for d in table.dicts], table.keys, table.fast) == want
    assert _ids(holders_of(objects, plan.model, table.entries, kept["held"])) == want


def test_canary_a_column_is_taken_only_where_the_walk_finds_its_owners(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Canary: a column whose owners are decoys (each holding the name in its ``__dict__``),
    and one whose row 2 is another layer, are read through the registries as before."""
    plan, kept = _compiled(monkeypatch)
    entries, objects = plan.holders.table.entries, plan.holders.hops.objects
    want = _ids(holders_of(objects, plan.model, entries))
    name, rows, owners, *_ = kept["held"][0]
    decoys = []
    for _ in owners:
        decoy = nn.Module()
        decoy.__dict__[name] = torch.zeros(1)
        decoys.append(decoy)
    swapped = list(owners)
    swapped[2] = plan.model.layers[0]
    for planted in (decoys, swapped):
        got = holders_of(objects, plan.model, entries, [(name, rows, planted)])
        assert _ids(got) == want


def test_a_column_out_of_its_names_order_is_read_as_before(
        monkeypatch: pytest.MonkeyPatch) -> None:
    plan, kept = _compiled(monkeypatch)
    entries, objects = plan.holders.table.entries, plan.holders.hops.objects
    want = _ids(holders_of(objects, plan.model, entries))
    name, rows, owners, *_ = kept["held"][0]
    planted = [(name, rows[::-1], owners[::-1]), (name, rows[:-1], owners), (name, [], [])]
    assert _ids(holders_of(objects, plan.model, entries, planted)) == want


def _other(name: str, owner_path: str) -> Any:
    return SimpleNamespace(node=SimpleNamespace(owner_path=owner_path,
                                                decl=SimpleNamespace(name=name)))


def test_canary_held_columns_refuses_a_column_another_entry_of_its_name_may_write(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Canary: an entry rebound after the columns, of a column's name, on one of that
    column's owners (or on an owner that is no module) leaves that column out; the template
    (the same name on layer 0, no row's owner) does not."""
    plan, kept = _compiled(monkeypatch)
    columns, others = kept["columns"], kept["others"]
    reader = PathReader(plan.model)
    assert {c[0] for c in entry_columns.held_columns(columns, others, reader)} == \
        {c.name for c in columns}
    assert {e.node.decl.name for e in others} >= {c.name for c in columns}  # the templates
    column = columns[0]
    on_a_row = _other(column.name, column.entries[3].node.owner_path)
    held = entry_columns.held_columns(columns, [*others, on_a_row], reader)
    assert {c[0] for c in held} == {c.name for c in columns[1:]}
    plan.model.plain = SimpleNamespace()
    no_module = _other(column.name, "plain")
    held = entry_columns.held_columns(columns, [*others, no_module], PathReader(plan.model))
    assert column.name not in {c[0] for c in held}
    another_name = _other("not_a_column", column.entries[3].node.owner_path)
    held = entry_columns.held_columns(columns, [*others, another_name], reader)
    assert len(held) == len(columns)


def _nested() -> nn.Module:
    root = nn.Module()
    root.a = nn.Module()
    root.a.inv = nn.Module()
    root.a.inv.w = nn.Parameter(torch.zeros(2), requires_grad=False)
    return root


def test_a_reader_is_untouched_by_names_that_are_no_hop_of_what_it_read() -> None:
    root = _nested()
    reader = PathReader(root)
    assert reader.get("a.inv.w") is root.a.inv.w  # reads "a" and "a.inv"
    assert reader.untouched_by({"prod", "w", "in", "nv"}) and reader.untouched_by(())
    assert not reader.untouched_by({"inv"}) and not reader.untouched_by({"prod", "a"})


def test_canary_a_store_on_a_hop_the_reader_read_is_seen() -> None:
    """Canary: a store replaces ``a.inv`` after the reader walked it: the reader is stale
    there, and ``untouched_by`` of the stored name says so."""
    root = _nested()
    reader = PathReader(root)
    stale = reader.get("a.inv.w")
    root.a.inv = nn.Module()
    root.a.inv.w = nn.Parameter(torch.ones(2), requires_grad=False)
    assert reader.get("a.inv.w") is stale  # what a kept reader would read
    assert not reader.untouched_by({"inv"})
    assert PathReader(root).get("a.inv.w") is root.a.inv.w


def test_the_startup_record_reads_the_sources_through_adoptions_reader(
        monkeypatch: pytest.MonkeyPatch) -> None:
    got: dict[str, Any] = {}
    real = planner._record_startup

    def keep(plan: Any, owners: PathReader | None = None) -> Any:
        got["owners"] = owners
        got["read"], reads = real(plan, owners)
        return got["read"], reads

    monkeypatch.setattr(planner, "_record_startup", keep)
    plan, _kept = _compiled(monkeypatch)
    assert isinstance(got["owners"], PathReader) and got["owners"].root is plan.model
    fresh = PathReader(plan.model)
    assert list(got["read"]) == [*plan.graph.sources(), *plan.folds.entries]
    assert all(v is fresh.get(p) for p, v in got["read"].items())
    with stamping(True):  # a proof that fails: a fresh reader
        monkeypatch.setattr(PathReader, "untouched_by", lambda self, names: False)
        planner.compile_plan(scaling_model(3), [scaling_spec()])
    assert got["owners"] is None


def test_the_startup_record_given_another_models_reader_reads_its_own(
        monkeypatch: pytest.MonkeyPatch) -> None:
    plan, _kept = _compiled(monkeypatch)
    other = PathReader(scaling_model(6))
    read, _reads = planner._record_startup(plan, owners=other)
    fresh = PathReader(plan.model)
    assert read and all(v is fresh.get(p) for p, v in read.items())



def _facts(columns: list[Any]) -> list[Any]:
    return [(type(c).__name__, c.template, c.name, list(c.ids), [id(e) for e in c.entries],
             [id(o) for o in c.owners], [id(s) for s in c.storages]) for c in columns]


def test_entry_columns_take_adoptions_columns_and_make_the_same_ones(
        monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[Any] = []

    def check(tables: Any, planned: Any, owners: PathReader, proven: list[Any]) -> None:
        assert len(proven) == 4 and {p.template.rpartition(".")[2] for p in proven} == \
            {"inv", "prod", "strides", "scale_alias"}
        want = entry_columns.entry_columns(tables, planned, owners)
        calls: list[Any] = []
        real = entry_columns._from_adoption
        monkeypatch.setattr(entry_columns, "_from_adoption",
                            lambda *a: calls.append(a) or real(*a))
        got = entry_columns.entry_columns(tables, planned, owners, proven)
        monkeypatch.setattr(entry_columns, "_from_adoption", real)
        assert len(calls) == 4 and len(want) == 4 and _facts(got) == _facts(want)
        seen.append(True)

    at_entry_columns(monkeypatch, check)
    assert seen


def test_canary_a_record_of_another_column_is_not_taken(monkeypatch: pytest.MonkeyPatch) -> None:
    """Canary: adoption's record of one column planted as another column's (its k): the
    declarations differ, so that column is read as before."""
    def check(tables: Any, planned: Any, owners: PathReader, proven: list[Any]) -> None:
        want = _facts(entry_columns.entry_columns(tables, planned, owners))
        by_k = {p.k: p for p in proven}
        ks = sorted(by_k)
        planted = [by_k[ks[0]]._replace(k=ks[1]), *(by_k[k] for k in ks[2:])]
        assert _facts(entry_columns.entry_columns(tables, planned, owners, planted)) == want

    at_entry_columns(monkeypatch, check)


def test_canary_what_adoption_did_not_prove_is_still_read(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Canary: a row's owner listing the name among its non-persistent buffers, and a row
    whose extra is no tensor, each leave their column out as the base rule does."""
    def check(tables: Any, planned: Any, owners: PathReader, proven: list[Any]) -> None:
        record = next(p for p in proven if p.template.endswith(".inv"))
        owner = record.owners[2]
        owner._non_persistent_buffers_set.add("inv")
        want = _facts(entry_columns.entry_columns(tables, planned, owners))
        assert "inv" not in {c[2] for c in want}
        assert _facts(entry_columns.entry_columns(tables, planned, owners, proven)) == want
        owner._non_persistent_buffers_set.discard("inv")
        extras = list(record.extras)
        extras[1] = 1.0
        planted = [record._replace(extras=extras) if p is record else p for p in proven]
        got = entry_columns.entry_columns(tables, planned, owners, planted)
        assert "inv" in {c.name for c in got}  # read as before: planned holds the tensors
        assert not any(c.entries is record.entries for c in got)

    at_entry_columns(monkeypatch, check)
