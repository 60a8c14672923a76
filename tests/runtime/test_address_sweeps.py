"""The address sweeps the compile and every reload use (:mod:`derivgraph.addresses`).

* On the interpreter and torch builds the project supports (CPython 3.11-3.12 with the GIL, torch
  2.11 to 2.14), the storage words and the dict version tags are proven at import: if a self-test
  stopped passing, every check would quietly fall back to its slow path and the tests that need
  the fast path would skip, so this is asserted here.
* :func:`~derivgraph.addresses.data_ptrs` is :func:`~derivgraph.addresses.address_of` of each
  value, whichever branch it takes; :class:`~derivgraph.addresses.Addresses`' word indices are
  each tensor's words, in tensor order. A canary plants a fast path that reads the storage's
  address (not the view's) and goes red.
"""

from __future__ import annotations

import sys
import sysconfig

import numpy as np
import pytest
import torch
from torch import nn

from derivgraph import addresses as addresses_module
from derivgraph import dict_versions
from derivgraph.addresses import address_of, addresses, data_ptrs

#: the interpreters the project runs on (this machine: 3.11; the GPU machine: 3.12)
SUPPORTED_CPYTHON = sys.implementation.name == "cpython" \
    and (3, 11) <= sys.version_info[:2] <= (3, 12) \
    and not sysconfig.get_config_var("Py_GIL_DISABLED")


class _Sub(torch.Tensor):
    """A tensor subclass (as an engine's parameter classes are)."""


def _values() -> list[object]:
    base = torch.arange(12.0)
    return [torch.zeros(3), base[5:], base.view(3, 4).t(), nn.Parameter(torch.ones(2)),
            torch.zeros(2).as_subclass(_Sub)]


@pytest.mark.skipif(not SUPPORTED_CPYTHON,
                    reason="the proofs are made for CPython 3.11-3.12 with the GIL")
def test_the_fast_paths_are_proven_on_the_supported_builds():
    assert addresses_module.AVAILABLE
    assert dict_versions.AVAILABLE


def test_data_ptrs_is_address_of_each_value_on_both_branches():
    tensors = _values()
    assert data_ptrs(tensors) == [t.data_ptr() for t in tensors]  # every one a tensor: sweeps
    assert data_ptrs(tensors)[1] == tensors[1].untyped_storage().data_ptr() + 5 * 4
    mixed = [*tensors, torch.empty(2, device="meta"), 3.0, None]
    assert data_ptrs(mixed) == [*(t.data_ptr() for t in tensors), 0, 0, 0]
    assert data_ptrs(mixed) == list(map(address_of, mixed))
    assert data_ptrs([torch.empty(4, device="meta")]) == [0]
    assert data_ptrs([]) == []


def test_canary_a_fast_path_reading_the_storage_address_goes_red(monkeypatch):
    monkeypatch.setattr(addresses_module, "tensor_method",
                        lambda types, name: lambda t: t.untyped_storage().data_ptr())
    tensors = _values()
    assert data_ptrs(tensors) != [t.data_ptr() for t in tensors]


class _OwnPtr(torch.Tensor):
    """A subclass answering ``data_ptr()`` and ``untyped_storage()`` itself (as an engine's
    parameter class may, through Python)."""

    calls: list[str] = []

    def data_ptr(self) -> int:
        _OwnPtr.calls.append("data_ptr")
        return super().data_ptr()

    def untyped_storage(self) -> torch.UntypedStorage:
        _OwnPtr.calls.append("untyped_storage")
        return super().untyped_storage()


def test_a_class_with_its_own_methods_is_asked_through_them():
    # the sweeps call ``torch.Tensor``'s methods unbound only on plain classes: a class's own
    # method is still called (the canary of column_layout.tensor_method's class test here)
    own = torch.arange(4.0).as_subclass(_OwnPtr)
    values = [torch.zeros(3), own, nn.Parameter(torch.ones(2))]
    _OwnPtr.calls.clear()
    assert data_ptrs(values) == [v.data_ptr() for v in values]
    assert _OwnPtr.calls == ["data_ptr", "data_ptr"]  # the sweep's call, then the test's


@pytest.mark.skipif(not addresses_module.AVAILABLE, reason="storage words not proven here")
def test_the_held_startup_storages_are_each_tensors_own_answer():
    own = torch.arange(4.0).as_subclass(_OwnPtr)
    values = [torch.zeros(3), own, nn.Parameter(torch.ones(2))]
    _OwnPtr.calls.clear()
    words = addresses(values, hold=True)
    assert words is not None and _OwnPtr.calls == ["untyped_storage"]
    assert [s.data_ptr() for s in words.storages] == \
        [v.untyped_storage().data_ptr() for v in values]
    assert addresses(values, hold=False).storages == []


@pytest.mark.skipif(not addresses_module.AVAILABLE, reason="storage words not proven here")
def test_the_word_indices_are_each_tensors_words_in_order():
    tensors = [*_values(), *(torch.zeros(5) for _ in range(40))]
    words = addresses(tensors)
    assert words is not None
    storage, offset, data = addresses_module._LAYOUT
    impls = [t._cdata for t in tensors]
    stores = [t.untyped_storage()._cdata for t in tensors]
    expected = [(a - min(impls)) // 8 + w for a in impls for w in (storage, offset)]
    assert words._impl_index.dtype == np.intp and words._impl_index.tolist() == expected
    assert words._store_index.tolist() == [(a - min(stores)) // 8 + data for a in stores]
    assert words.kept()
    tensors[1].set_(tensors[1].untyped_storage(), 2, (3,), (1,))  # another offset: seen
    assert not words.kept()
