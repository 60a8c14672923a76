"""The storage addresses a compile's readers share (``lower_layers.column_addresses``).

The lowering's layer proof and the schedule's storage fence read the storage address of the
same columns of bound tensors; during a compile (the plan's layout book set) the answer for a
run of refs is kept on the bound tensors and read once. It is kept only while the book is set,
and dropped whenever tensors are bound or staged again: a rebind after an entry took another
storage answers the new address. The plan compiled with the kept addresses is the plan compiled
without them (the printed passes equal). Canary: a rebind that keeps the addresses answers the
old storage.
"""

from __future__ import annotations

from typing import Any

import pytest
import torch

from derivgraph import compile_plan
from derivgraph.column_layout import ColumnLayouts
from derivgraph.compiler import lower_layers
from derivgraph.compiler.lower_layers import column_addresses
from derivgraph.compiler.stamp import stamping
from derivgraph.tools.bench_scaling import scaling_model, scaling_spec


def _plan(layers: int = 12) -> Any:
    torch.manual_seed(0)
    with stamping(True):
        return compile_plan(scaling_model(layers), [scaling_spec()])


def _read(refs: list[str], plan: Any) -> list[int]:
    """Each ref's storage address, read one by one."""
    return [plan.tensors.bound(r).untyped_storage().data_ptr() for r in refs]


def test_addresses_are_kept_while_the_book_is_set_and_read_again_after_a_rebind() -> None:
    plan = _plan()
    tensors = plan.tensors
    refs = list(next(c for c in plan.entries.columns if c.name == "inv").ids)
    assert tensors.layouts is None and not tensors.address_memo  # dropped after the compile
    assert column_addresses(tensors, refs) == _read(refs, plan)
    assert not tensors.address_memo  # no book: nothing kept
    tensors.layouts = ColumnLayouts()
    try:
        first = column_addresses(tensors, refs)
        assert first == _read(refs, plan) and column_addresses(tensors, refs) is first
        entry = plan.entries.by_id[refs[3]]
        old, entry.storage = entry.storage, torch.zeros(8)
        try:
            tensors.bind(plan.model)  # tensors bound again: the addresses are read again
            again = column_addresses(tensors, refs)
            assert again == _read(refs, plan) and again[3] != first[3]
            tensors.alloc_stages({"x": torch.zeros(())})  # a stage: read again too
            assert column_addresses(tensors, refs) is not again
        finally:
            entry.storage = old
    finally:
        tensors.layouts = None
    assert not tensors.address_memo


def test_the_plan_is_the_one_compiled_without_kept_addresses(
        monkeypatch: pytest.MonkeyPatch) -> None:
    reads: list[int] = []
    real = lower_layers._addresses

    def counting(values: list[Any]) -> Any:
        reads.append(len(values))
        return real(values)

    monkeypatch.setattr(lower_layers, "_addresses", counting)
    kept = _plan(40)
    kept_reads = list(reads)
    monkeypatch.setattr(lower_layers, "_memo", lambda ctx: None)
    reads.clear()
    plain = _plan(40)
    assert kept.source() == plain.source()
    assert kept.programs.written() == plain.programs.written()
    # the schedule's fence reads the four columns it touches (scale, weight, inv, prod; 39
    # rows each) again only where the layer proof's answers were not kept
    assert reads.count(39) == kept_reads.count(39) + 4
