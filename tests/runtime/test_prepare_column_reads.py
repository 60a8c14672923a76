"""``Plan.prepare`` takes what the compile already holds instead of reading it again (prep79).

- The startup tensors' check (:meth:`BoundTensors.startup_addresses
  <derivgraph.runtime.storage.BoundTensors.startup_addresses>`): an entry column's rows'
  storages and startup addresses are the column's lists
  (:func:`~derivgraph.runtime.accessors.column_read`), the rest read per entry; the check holds
  the very tensors and addresses the per-entry rule gives (the kept entries, in order).
- The refill table's addresses: where ``prepare``'s own check of the holder table just took its
  words from the state it proved, the refill table takes those addresses without gathering the
  words again; words taken before (or a check that fails) leave the gather to decide.
"""

from __future__ import annotations

from itertools import compress

import pytest
import torch

from derivgraph import addresses as addresses_module
from derivgraph import compile_plan
from derivgraph.compiler.stamp import stamping
from derivgraph.runtime.accessors import HolderTable
from derivgraph.runtime.entry import keeps_startup
from derivgraph.tools.bench_scaling import scaling_model, scaling_spec

words_only = pytest.mark.skipif(not addresses_module.AVAILABLE,
                                reason="the storage words are not proven on this build")


def _per_entry(plan) -> tuple[list, list[int]]:
    """The startup check's tensors and addresses by the per-entry rule (the reference)."""
    entries = list(plan.entries.values())
    kept = list(compress(entries, keeps_startup(entries)))
    return [e.storage for e in kept], [e.startup_ptr for e in kept]


def _fresh_startup(plan):
    plan.tensors._startup = None
    return plan.tensors.startup_addresses()


@pytest.mark.parametrize("stamped", [True, False])
def test_the_startup_check_holds_the_per_entry_rules_tensors_and_addresses(stamped) -> None:
    with stamping(stamped):
        plan = compile_plan(scaling_model(12), [scaling_spec()])
    assert bool(plan.entries.rows) is stamped  # the columns' rows answer only where stamped
    tensors, ptrs = _per_entry(plan)
    check = _fresh_startup(plan)
    assert len(check.tensors) == len(tensors) == 3 * 12  # inv, prod, strides: no alias kept
    assert all(map(lambda a, b: a is b, check.tensors, tensors))
    assert check.ptrs == ptrs == [t.data_ptr() for t in tensors]
    assert check.intact()


def test_the_startup_check_takes_the_columns_lists() -> None:
    """The canary: a column's startup addresses planted wrong in its list (its entries, made
    and kept before the plant, keep the right ones) show up in the check, which reads the
    column, not each row; a column without recorded addresses has its rows' entries read.
    (The plan holds its columns' rows by column (``EntryTable.hold_rows``): an entry is made
    from its column where first read, so the reference is read before the plant.)"""
    plan = compile_plan(scaling_model(12), [scaling_spec()])
    (span, column), *_ = [(s, c) for s, c in plan.entries.rows if c.kept]
    right = list(column.ptrs)
    reference = _per_entry(plan)[1]  # every entry made now, and kept: the right addresses
    column.ptrs[0] += 64
    try:
        check = _fresh_startup(plan)
        assert check.ptrs != reference and not check.intact()
        assert check.ptrs.count(right[0] + 64) == 1 and right[0] not in check.ptrs
        assert _per_entry(plan)[1] == reference  # the kept entries: not the column's list
        column.ptrs, planted = None, column.ptrs  # no recorded addresses: each row read
        assert _fresh_startup(plan).ptrs == _per_entry(plan)[1]
        column.ptrs = planted
    finally:
        column.ptrs[:] = right
    assert _fresh_startup(plan).ptrs == _per_entry(plan)[1]


def _addresses(copy) -> list[int]:
    """Each target's address a flat copy writes at."""
    return (copy.rows.__array_interface__["data"][0] + copy.starts).tolist()


@words_only
def test_prepare_takes_the_addresses_its_check_just_proved(monkeypatch) -> None:
    gathered: list[int] = []
    real = HolderTable.startup_ptrs
    monkeypatch.setattr(HolderTable, "startup_ptrs",
                        lambda self: gathered.append(1) or real(self))
    plan = compile_plan(scaling_model(40), [scaling_spec()])
    assert gathered == []  # prepare's check took the words: no second gather
    table = plan._refill_table
    assert table is not None and table.flat
    for a, b, copy in table.flat:
        assert _addresses(copy) == [t.data_ptr() for t in table.storages[a:b]]
        records = [plan.holders.table.entries[i].startup_data for i in table.index[a:b]]
        assert all(map(lambda x, y: x is y, copy.held, records))
    # the gather gives the same addresses (the words are kept): the same copies
    assert plan.holders.table.startup_ptrs() == plan.holders.table.ptrs


@words_only
def test_words_taken_before_prepare_are_gathered_again(monkeypatch) -> None:
    """The canary for "just taken": a second ``prepare`` (capture's) finds the holder table's
    words taken already, so the refill table gathers them (a storage could have moved since
    they were taken, as below: then no address is trusted and the copies read the storages)."""
    plan = compile_plan(scaling_model(40), [scaling_spec()])
    gathered: list[int] = []
    real = HolderTable.startup_ptrs
    monkeypatch.setattr(HolderTable, "startup_ptrs",
                        lambda self: gathered.append(1) or real(self))
    plan._refill_table = None
    plan.prepare()
    assert gathered == [1] and plan._refill_table.flat
    # a target re-pointed in place (``.data =``): the words no longer prove the addresses
    first = plan._refill_table
    target = first.storages[0]
    old = target.data
    target.data = old.clone()
    try:
        plan._refill_table = None
        plan.prepare()
        assert gathered == [1, 1]
        table = plan._refill_table
        assert plan.holders.table.startup_ptrs() is None
        for a, b, copy in table.flat:
            assert _addresses(copy) == [t.data_ptr() for t in table.storages[a:b]]
            assert all(type(s) is torch.UntypedStorage for s in copy.held)
    finally:
        target.data = old


def test_a_holder_left_to_the_per_entry_path_leaves_the_refill_table_incomplete() -> None:
    """``HolderTable.all_fast`` answers the refill table's "every target re-bound by one dict
    store" only while it holds: a holder re-resolved outside a dict (``refresh``) flips it, and
    the table's own sweep then finds that target (the canary for the shortcut)."""
    from derivgraph.runtime.accessors import NO_DICT
    from derivgraph.runtime.engine import RefillTable

    plan = compile_plan(scaling_model(12), [scaling_spec()])
    table = plan.holders.table
    targets = plan._refill_targets()
    args = (targets, set(plan.constant_entries), set(plan._opaque()))
    assert table.all_fast and RefillTable(table, *args).complete
    i = table.id_list.index(targets[3])
    assert table.refresh([i], lambda entry: (None, NO_DICT, entry.id))  # flipped
    assert not table.all_fast and not table.fast[i]
    refill = RefillTable(table, *args)
    assert not refill.complete and targets[3] not in refill.ids
    assert len(refill.ids) == len(targets) - 1
