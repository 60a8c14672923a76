"""``Plan.prepare`` reads what the compile recorded instead of reading it again (prep72).

- The refill table's positions: a segment's predicted positions are checked by one list
  compare per residue of strided slices (:func:`~derivgraph.runtime.engine._strided_equal`);
  where it refuses, the per-target sweep finds where the segment ends.
- The startup tensors' words: :meth:`BoundTensors.take_startup_words
  <derivgraph.runtime.storage.BoundTensors.take_startup_words>` tries the mask its startup check
  was made with; :meth:`AtAddresses.take_words <derivgraph.addresses.AtAddresses.take_words>`
  proves any mask it accepts, and one it refuses is made from the entries given.
- The flat copies' storages: where the table's words prove the startup addresses, each flat
  copy keeps the entries' startup records (which hold the startup storages) instead of reading
  every target's ``untyped_storage()``; an entry without one makes the copy read them.
"""

from __future__ import annotations

import pytest
import torch

from derivgraph import addresses as addresses_module
from derivgraph import compile_plan
from derivgraph.addresses import addresses
from derivgraph.runtime import engine, storage
from derivgraph.runtime.engine import _strided_equal, strided_positions
from derivgraph.tools.bench_scaling import scaling_model, scaling_spec


def _stamped(layers: int) -> tuple[list[str], list[str]]:
    names = ("inv", "prod", "strides", "scale_alias")
    items = [f"layers.{i}.{n}" for i in range(layers) for n in names]
    return items, [f"layers.{i}.{n}" for i in range(layers) for n in ("inv", "prod")]


def test_the_strided_compare_accepts_a_stamped_segment_and_refuses_one_target_off() -> None:
    items, targets = _stamped(50)
    assert _strided_equal(items, targets, [0, 1], 2, 4, len(targets))
    assert _strided_equal(items, targets, [0, 1], 2, 4, 7)  # a prefix (odd length)
    for wrong in (0, 1, 57, len(targets) - 1):
        off = list(targets)
        off[wrong] = items[4 * (wrong // 2) + 2]  # the row's strides: held, not predicted
        assert not _strided_equal(items, off, [0, 1], 2, 4, len(off))
        # the sweep then ends the segment there: every answer is the dict's (or None)
        got = strided_positions(items, off)
        assert got is None or got == [items.index(t) for t in off]


def test_a_refused_compare_leaves_the_sweep_to_end_the_segment(monkeypatch) -> None:
    """Where a target breaks the period, the answer is the dict's whether the compare runs or
    the sweep alone decides (the base rule)."""
    items, targets = _stamped(60)
    targets[40:43] = []  # a gap: a second segment
    want = [items.index(t) for t in targets]
    assert strided_positions(items, targets) == want
    monkeypatch.setattr(engine, "_strided_equal", lambda *args: False)
    assert strided_positions(items, targets) == want


pytestmark_words = pytest.mark.skipif(not addresses_module.AVAILABLE,
                                      reason="the storage words are not proven on this build")


def _places(words) -> tuple:
    return (words._expected, (words._impls.ctypes.data + 8 * words._impl_index).tolist(),
            (words._stores.ctypes.data + 8 * words._store_index).tolist(),
            list(map(id, words.tensors)))


@pytestmark_words
def test_prepare_takes_the_startup_words_without_reading_the_entries_again(monkeypatch) -> None:
    made: list[int] = []
    real = storage._restorable
    monkeypatch.setattr(storage, "_restorable",
                        lambda entries, rows=(): made.append(1) or real(entries, rows))
    plan = compile_plan(scaling_model(8), [scaling_spec()])
    startup = plan.tensors.startup_addresses()
    assert made == [1]  # the startup check's own; the words took its mask
    assert startup.words is not None
    assert _places(startup.words) == _places(addresses(startup.tensors, hold=False))


@pytestmark_words
def test_a_wrong_kept_mask_is_refused_and_the_entries_mask_decides() -> None:
    """The canary: a kept mask marking other tensors (as many) is refused by take_words and
    the words are still taken, by the entries' own mask, at the right places."""
    plan = compile_plan(scaling_model(8), [scaling_spec()])
    tensors, table = plan.tensors, plan.holders.table
    tensors._startup = None  # a fresh startup check, no words
    startup = tensors.startup_addresses()
    mask = tensors._startup_mask
    assert startup.words is None and mask is not None and len(mask) == len(table.entries)
    tensors._startup_mask = mask[1:] + mask[:1]  # rotated: other tensors marked
    assert tensors._startup_mask != mask
    assert tensors.take_startup_words(table.addresses(), table.entries)
    assert _places(startup.words) == _places(addresses(startup.tensors, hold=False))


def _table(plan):
    return plan._refill_table_now()


@pytestmark_words
def test_the_flat_copies_keep_the_entries_startup_records() -> None:
    plan = compile_plan(scaling_model(40), [scaling_spec()])
    table = _table(plan)
    assert table.flat and plan.holders.table.startup_ptrs() is not None
    for a, b, copy in table.flat:
        records = [plan.holders.table.entries[i].startup_data for i in table.index[a:b]]
        assert len(copy.held) == b - a
        assert all(map(lambda x, y: x is y, copy.held, records))


@pytestmark_words
def test_an_entry_without_a_startup_record_makes_the_copies_read_the_storages() -> None:
    """The canary: one target's entry keeps no startup record (None), so no run takes the
    records: every flat copy holds the targets' own ``untyped_storage()``."""
    plan = compile_plan(scaling_model(40), [scaling_spec()])
    held = plan.holders.table
    first = plan._refill_table_now()
    entry = held.entries[first.index[0]]
    kept, entry.startup_data = entry.startup_data, None
    try:
        assert engine._startup_holders(held, first.index) is None
        plan._refill_table = None
        table = plan._refill_table_now()
        assert table.flat
        for a, b, copy in table.flat:
            assert all(type(s) is torch.UntypedStorage for s in copy.held)
            assert [s.data_ptr() for s in copy.held] == \
                [t.untyped_storage().data_ptr() for t in table.storages[a:b]]
    finally:
        entry.startup_data = kept
