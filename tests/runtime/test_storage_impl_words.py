"""hold52: :class:`~derivgraph.addresses.Addresses` reads each tensor's ``StorageImpl`` address
from the tensor's storage word (the word the import self-test proved equal to
``untyped_storage()._cdata``) in one gather, instead of making a storage object per tensor;
a null word (no storage) is refused. Checked against the storage objects' own addresses, with
the storages held and not, and every swap of the guard's tests still moves a read word."""

from __future__ import annotations

import pytest
import torch

from derivgraph import addresses as addresses_module
from derivgraph.addresses import Addresses, addresses
from tests.guard.test_storage_words import SWAPS, _tensors


@pytest.fixture
def words_on() -> None:
    if not addresses_module.AVAILABLE:
        pytest.skip("the storage words are not proven on this torch build")


def _stores(words: Addresses) -> list[int]:
    """The StorageImpl addresses ``words`` reads the data words at."""
    base = words._stores.ctypes.data
    return [base + 8 * int(i) - 8 * addresses_module._LAYOUT[2] for i in words._store_index]


@pytest.mark.parametrize("hold", [True, False])
def test_each_storage_word_is_the_storage_objects_address(words_on, hold: bool) -> None:
    shared = torch.arange(10.0)
    tensors = [*_tensors(), shared[1:4], shared[5:], torch.empty(0), torch.zeros(2, 3)[:, 1]]
    words = addresses(tensors, hold=hold)
    assert words is not None and words.kept()
    assert _stores(words) == [t.untyped_storage()._cdata for t in tensors]
    assert len(words.storages) == (len(tensors) if hold else 0)


@pytest.mark.parametrize("hold", [True, False])
@pytest.mark.parametrize("swap", sorted(SWAPS))
def test_every_swap_moves_a_read_word_held_or_not(words_on, swap: str, hold: bool) -> None:
    tensors = _tensors()
    words = addresses(tensors, hold=hold)
    assert words is not None and words.kept()
    SWAPS[swap](tensors)
    assert not words.kept()


def test_a_null_storage_word_is_refused(words_on, monkeypatch: pytest.MonkeyPatch) -> None:
    """A layout whose storage word is a word that reads 0 here (a fresh tensor's storage
    offset): refused before any StorageImpl is read, and :func:`addresses` says None."""
    _storage, offset, data = addresses_module._LAYOUT
    with pytest.raises(ValueError):
        Addresses([torch.zeros(4)], (offset, offset, data), hold=False)
    monkeypatch.setattr(addresses_module, "_LAYOUT", (offset, offset, data))
    assert addresses([torch.zeros(4)]) is None
