"""One rule says which derived tensors keep their startup storage (a refill may re-point them
back): :func:`~derivgraph.runtime.entry.keeps_startup`. The startup tensors' address check
(:meth:`BoundTensors.startup_addresses`), the marks its words are taken by
(:meth:`BoundTensors.take_startup_words`) and :meth:`BoundTensors.restore_storage` all read it:
a rule swapped in is followed by each (red where one restates its own)."""

from __future__ import annotations

import torch

from derivgraph import compile_plan
from derivgraph.runtime import storage as storage_module
from derivgraph.runtime.entry import Entry, StartupColumn, keeps_startup
from derivgraph.tools.bench_scaling import scaling_model, scaling_spec


def test_keeps_startup_marks_the_entries_with_startup_data():
    plan = compile_plan(scaling_model(4), [scaling_spec()])
    entries = list(plan.entries.values())
    assert keeps_startup(entries) == [e.startup_data is not None for e in entries]
    assert True in keeps_startup(entries) and False in keeps_startup(entries)
    lazy: Entry = entries[0]
    lazy.startup_data = StartupColumn([torch.zeros(2).untyped_storage()], None,
                                      [lazy.id])  # a column's record counts
    none = entries[1]
    none.startup_data = None
    assert keeps_startup([lazy, none]) == [True, False]


def test_the_startup_check_and_its_marks_follow_the_one_rule(monkeypatch):
    plan = compile_plan(scaling_model(4), [scaling_spec()])
    tensors = plan.tensors
    entries = list(plan.entries.values())
    kept = [e for e in entries if e.startup_data is not None]
    assert storage_module._restorable(entries) == bytes(e in kept for e in entries)
    # another rule (the first kept entry only): each reader follows it
    first = kept[0]
    monkeypatch.setattr(storage_module, "keeps_startup",
                        lambda es, rows=(): [e is first for e in es])
    tensors._startup = None
    check = tensors.startup_addresses()
    assert check.tensors == [first.storage]
    assert storage_module._restorable(entries) == bytes(e is first for e in entries)
    # restore_storage re-points only what the rule keeps
    other = kept[1]
    for entry in (first, other):
        entry.storage.data = entry.storage.detach().clone()
    assert tensors.restore_storage() == [first.id]
    assert first.storage.data_ptr() == first.startup_ptr
    assert other.storage.data_ptr() != other.startup_ptr
