"""Reads the compile takes from a proof it already holds instead of reading them again.

* The refill table's flat copies take their targets' addresses from the holder table's
  startup addresses where that table's storage words prove every storage still there
  (:meth:`~derivgraph.addresses.AtAddresses.proven`); a storage re-pointed since makes the
  words fail, and the addresses are read (the canary: the copies' rows are the storages' real
  addresses).
* :meth:`~derivgraph.runtime.storage.BoundTensors.bind` copies the startup record's first
  items where its keys are the sources in order; any other record is looked up path by path
  (the canary: a record in another order still binds the sources in the graph's order).
* :func:`~derivgraph.dict_versions._views`' indices in one NumPy pass are the per-dict rule's.
"""

from __future__ import annotations

import ctypes
import random
from typing import Any

import numpy as np
import pytest
import torch

from derivgraph import dict_versions
from derivgraph.compiler import flat
from derivgraph.runtime import flat_copy
from derivgraph.runtime.storage import _sources_of
from tests.runtime.test_column_layout import FLAT_LAYERS, _compile_keeping, _refill_table


def _addresses(table: Any) -> list[list[int]]:
    """Each flat copy's target addresses as its rows say (the lowest target's byte view plus
    each row's start)."""
    return [(c.starts + c.rows.ctypes.data).tolist() for _, _, c in table.flat]


def _real(table: Any) -> list[list[int]]:
    return [[t.data_ptr() for t in table.storages[a:b]] for a, b, _ in table.flat]


def _spy_starts(monkeypatch: pytest.MonkeyPatch) -> list[bool]:
    """Whether each ``span_of_run`` call was handed its addresses."""
    given: list[bool] = []
    real = flat.span_of_run

    def spying(tensors: Any, dtype: Any, shape: Any, starts: Any = None) -> Any:
        given.append(starts is not None)
        return real(tensors, dtype, shape, starts)

    monkeypatch.setattr(flat_copy.flat, "span_of_run", spying)
    return given


def test_flat_copies_take_the_proven_startup_addresses(monkeypatch: pytest.MonkeyPatch) -> None:
    plan, book, _ = _compile_keeping(monkeypatch, FLAT_LAYERS)
    assert plan.holders.table.startup_ptrs() is not None  # the compile's prepare took words
    given = _spy_starts(monkeypatch)
    table = _refill_table(plan, book)
    assert given == [True, True] and len(table.flat) == 2  # inv and prod, strides
    assert _addresses(table) == _real(table)
    assert _addresses(table) == _addresses(_refill_table(plan, None))  # the sweeps' answer


def test_canary_a_repointed_storage_makes_the_flat_copies_read_addresses(
        monkeypatch: pytest.MonkeyPatch) -> None:
    plan, book, made = _compile_keeping(monkeypatch, FLAT_LAYERS)
    moved = made[0].storages[3]
    before = moved.data_ptr()
    moved.data = torch.empty_like(moved)  # another storage: the table's words fail
    assert moved.data_ptr() != before and plan.holders.table.startup_ptrs() is None
    given = _spy_starts(monkeypatch)
    table = _refill_table(plan, book)
    assert given and not any(given)
    assert _addresses(table) == _real(table)
    assert before not in [a for run in _addresses(table) for a in run]


def test_span_of_run_takes_the_given_starts_else_reads() -> None:
    tensors = [torch.zeros(3) for _ in range(5)]
    ptrs = [t.data_ptr() for t in tensors]
    given = flat.span_of_run(tensors, torch.float32, torch.Size([3]), ptrs)
    read = flat.span_of_run(tensors, torch.float32, torch.Size([3]))
    assert given is not None and read is not None
    assert given.starts.tolist() == read.starts.tolist() == ptrs
    short = flat.span_of_run(tensors, torch.float32, torch.Size([3]), ptrs[:2])
    assert short is not None and short.starts.tolist() == ptrs  # not one per tensor: read


def test_proven_is_the_words_alone() -> None:
    from derivgraph.addresses import AVAILABLE, AtAddresses

    t = torch.zeros(4)
    at = AtAddresses([t], [t.data_ptr()])
    assert not at.proven()  # no words yet: no exact compare is made here
    assert at.intact() and at.proven() is AVAILABLE
    t.data = torch.zeros(4)
    assert not at.proven()


def test_sources_of_copies_a_record_in_the_sources_order() -> None:
    sources = ["a.w", "b.w", "c.w"]
    record = {"a.w": 1, "b.w": 2, "c.w": 3, "fold.x": 4}  # the folds' entries after them
    got = _sources_of(sources, None, record)
    assert list(got.items()) == [("a.w", 1), ("b.w", 2), ("c.w", 3)]
    assert _sources_of(sources, None, {"a.w": 1, "b.w": 2, "c.w": 3}) == \
        {"a.w": 1, "b.w": 2, "c.w": 3}
    with pytest.raises(KeyError):
        _sources_of(sources, None, {"a.w": 1, "b.w": 2})


def test_canary_a_record_in_another_order_is_looked_up() -> None:
    sources = ["a.w", "b.w", "c.w"]
    record = {"c.w": 3, "a.w": 1, "b.w": 2}
    got = _sources_of(sources, None, record)
    assert list(got) == sources and list(got.values()) == [1, 2, 3]


def test_a_model_is_read_without_a_record() -> None:
    model = torch.nn.Sequential(torch.nn.Linear(2, 2))
    got = _sources_of(["0.weight", "0.bias"], model, None)
    assert got["0.weight"] is model[0].weight and got["0.bias"] is model[0].bias


def _views_by_rule(dicts: list[dict[Any, Any]]) -> tuple[int, int, list[int]]:
    addresses = [id(d) for d in dicts]
    low = min(addresses)
    words = (max(addresses) - low + dict_versions._TAG_OFFSET) // dict_versions._WORD + 1
    return low, words, [(a - low + dict_versions._TAG_OFFSET) // dict_versions._WORD
                        for a in addresses]


def test_views_index_is_the_per_dict_rule() -> None:
    dicts: list[dict[Any, Any]] = [{"k": i} for i in range(500)]
    random.Random(0).shuffle(dicts)
    view, index = dict_versions._views(dicts)
    low, words, by_rule = _views_by_rule(dicts)
    assert index.dtype == np.intp and index.tolist() == by_rule
    assert view.size == words and view.ctypes.data == low
    assert ctypes.c_int64.from_address(low + 8 * by_rule[0]).value == view[index[0]]
