"""The startup storage check by one gather of the tensors' storage words: every kind of swap
moves a read word (then the data addresses are compared exactly), an in-place write moves none,
and the guard restores a swap with the words on or off. The canary plants a gather that always
agrees: the swap goes unseen. :class:`AtAddresses` (the one rule every caller uses) takes the
words only right after an exact compare passed, and once; its canary takes them unproven."""

from __future__ import annotations

from collections.abc import Callable

import pytest
import torch

from derivgraph import addresses as addresses_module
from derivgraph.addresses import Addresses, AtAddresses, addresses
from derivgraph.guard import Change
from tests.guard.test_guard import Layer, _startup


@pytest.fixture
def words_on() -> None:
    if not addresses_module.AVAILABLE:
        pytest.skip("the storage words are not proven on this torch build")


def _tensors() -> list[torch.Tensor]:
    return [torch.zeros(6), torch.arange(8.0)[2:], torch.nn.Parameter(torch.ones(4)),
            torch.zeros(3, 3).t()]


SWAPS: dict[str, Callable[[list[torch.Tensor]], object]] = {
    "data": lambda ts: setattr(ts[2], "data", torch.ones(4)),
    "offset": lambda ts: ts[1].set_(ts[1].untyped_storage(), 3, (2,), (1,)),
    "other storage": lambda ts: ts[3].set_(torch.zeros(9).untyped_storage(), 0, (3, 3), (1, 3)),
    "resized": lambda ts: ts[0].untyped_storage().resize_(1 << 16),
}


@pytest.mark.parametrize("swap", sorted(SWAPS))
def test_every_swap_moves_a_read_word(words_on, swap: str) -> None:
    tensors = _tensors()
    words = addresses(tensors)
    ptrs = [t.data_ptr() for t in tensors]
    assert words is not None and words.kept()
    SWAPS[swap](tensors)
    assert [t.data_ptr() for t in tensors] != ptrs  # a real swap
    assert not words.kept()


def test_in_place_writes_move_no_word(words_on) -> None:
    tensors = _tensors()
    words = addresses(tensors)
    for t in tensors:
        t.data.mul_(3)
    tensors[0].copy_(torch.ones(6))
    assert words is not None and words.kept()


def test_no_words_where_unproven(monkeypatch) -> None:
    monkeypatch.setattr(addresses_module, "AVAILABLE", False)
    assert addresses(_tensors()) is None
    assert addresses([]) is None


@pytest.mark.parametrize("check", ["words", "c++ loop", "python loop"])
def test_a_storage_swap_is_restored_by_every_address_check(monkeypatch, check: str) -> None:
    """``.data =`` stores into no dict: the storage words (or, without them, the C++ address
    loop or the Python one) must find the swap, and the restore must put the startup back."""
    if check != "words":
        monkeypatch.setattr(addresses_module, "addresses",
                            lambda tensors, hold=True, shared=False: None)
    if check == "python loop":
        monkeypatch.setattr(addresses_module, "_PTRS_EQUAL", None)
    layer = Layer()
    guard, kept = _startup(layer)
    assert (guard._at.words is not None) is (check == "words" and addresses_module.AVAILABLE)
    assert guard.storage_kept()
    kept["buffer"].data = kept["buffer"].clone()  # `.data =`: no dict store at all
    assert not guard.storage_kept()
    report = guard.restore(layer)
    assert [(c.path, c.change) for c in report.restored] == [("inv", Change.STORAGE)]
    assert guard.storage_kept()
    if guard._at.words is not None:  # the startup storage is back under the tensor: words too
        assert guard._at.words.kept()


def test_canary_a_gather_that_always_agrees_misses_the_storage_swap(monkeypatch,
                                                                   words_on) -> None:
    monkeypatch.setattr(Addresses, "kept", lambda self: True)  # planted
    layer = Layer()
    guard, kept = _startup(layer)
    ptr = kept["buffer"].data_ptr()
    kept["buffer"].data = kept["buffer"].clone()
    assert guard.restore(layer).restored == [] and kept["buffer"].data_ptr() != ptr


def test_the_self_test_proves_the_found_layout_and_refuses_one_missing_a_swap(monkeypatch,
                                                                              words_on) -> None:
    layout = addresses_module._layout()
    assert layout is not None and addresses_module._self_test() == layout
    storage, _offset, data = layout
    # planted: the offset word read from the storage word (a `set_` to another offset unseen)
    monkeypatch.setattr(addresses_module, "_layout", lambda: (storage, storage, data))
    assert addresses_module._self_test() is None


def _intact_taking_words_unproven(self: AtAddresses) -> bool:
    """The planted bug: the words taken before any compare (of whatever state is there)."""
    if not self._taken:
        self.words, self._taken = addresses(self.tensors, hold=self._hold), True
    return (self.words is not None and self.words.kept()) or addresses_module.addresses_equal(
        self.tensors, self.ptrs)


def _swapped_before_the_first_check() -> tuple[AtAddresses, list[torch.Tensor]]:
    tensors = _tensors()
    at = AtAddresses(tensors, [t.data_ptr() for t in tensors])
    SWAPS["data"](tensors)  # before any check: the words must not describe this state
    return at, tensors


@pytest.mark.parametrize("check", ["words", "no-words"])
def test_at_addresses_takes_the_words_once_right_after_an_exact_compare(monkeypatch,
                                                                         check: str) -> None:
    if check == "no-words":
        monkeypatch.setattr(addresses_module, "AVAILABLE", False)
    elif not addresses_module.AVAILABLE:
        pytest.skip("the storage words are not proven on this torch build")
    at, tensors = _swapped_before_the_first_check()
    assert not at.intact() and at.words is None  # the compare failed: nothing taken
    startup = tensors[2].data
    tensors[2].data = torch.ones(4)
    assert not at.intact() and at.words is None
    at.ptrs[2] = tensors[2].data_ptr()  # expect the state now there: the compare passes
    assert at.intact()
    words = at.words
    assert (words is not None) is (check == "words")
    SWAPS["offset"](tensors)
    assert not at.intact()  # a moved word: the exact compare decides (and fails)
    del startup


def test_canary_words_taken_before_a_compare_hide_the_swap(monkeypatch, words_on) -> None:
    monkeypatch.setattr(AtAddresses, "intact", _intact_taking_words_unproven)  # planted
    at, _tensors_swapped = _swapped_before_the_first_check()
    assert at.intact()  # the swapped state's words agree with themselves: the swap unseen
