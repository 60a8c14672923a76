"""An address check's first compare made from the storage words (:meth:`Addresses.at`): the
data address each tensor's words give (storage data address plus offset times element size; 0
for a tensor of no element) agrees with ``data_ptr()`` for every kind of tensor and every swap,
so :meth:`AtAddresses.intact` takes its words from that compare without asking each tensor
again (torch's C++ loop runs only where the words do not prove it). The canaries plant a
compare that ignores the element count, and one that ignores the offsets: each goes red."""

from __future__ import annotations

from collections.abc import Callable

import pytest
import torch

from derivgraph import addresses as addresses_module
from derivgraph.addresses import Addresses, AtAddresses, addresses


@pytest.fixture
def numel_on() -> None:
    if addresses_module._NUMEL is None:
        pytest.skip("the element count word is not proven on this torch build")


class _Sub(torch.nn.Parameter):
    """A parameter subclass (as an engine's) whose ``data_ptr`` goes through Python."""

    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        return super().__torch_function__(func, types, args, kwargs or {})


def _tensors() -> list[torch.Tensor]:
    base = torch.arange(40, dtype=torch.float16)
    return [torch.zeros(6), torch.arange(8.0)[2:], torch.nn.Parameter(torch.ones(4)),
            torch.zeros(3, 3).t(), base[7:19], torch.zeros(5, dtype=torch.int64)[3:],
            torch.zeros(6)[6:], torch.zeros(0), torch.zeros(4, dtype=torch.uint8)[1:],
            _Sub(torch.ones(3)), torch.empty(3, device="meta")]


def _ptr(t: torch.Tensor) -> int:
    return 0 if t.is_meta else torch._C.TensorBase.data_ptr(t)


CHANGES: dict[str, Callable[[list[torch.Tensor]], object]] = {
    "none": lambda ts: None,
    "in place": lambda ts: ts[0].add_(1),
    ".data =": lambda ts: setattr(ts[2], "data", torch.ones(4)),
    "other offset": lambda ts: ts[1].set_(ts[1].untyped_storage(), 3, (2,), (1,)),
    "half at another offset": lambda ts: ts[4].set_(ts[4].untyped_storage(), 8, (12,), (1,)),
    "resized storage": lambda ts: ts[0].untyped_storage().resize_(1 << 16),
    "resized to no element": lambda ts: ts[5].resize_(0),
    "empty given elements": lambda ts: ts[7].resize_(3),
    "subclass moved": lambda ts: setattr(ts[9], "data", torch.zeros(3)),
}


@pytest.mark.parametrize("change", sorted(CHANGES))
def test_the_words_compare_is_the_exact_compare(numel_on, change: str) -> None:
    """Right after a change, :meth:`Addresses.at` of freshly read words answers as the exact
    compare against the startup addresses does (and passes only where it does)."""
    tensors = _tensors()
    ptrs = list(map(_ptr, tensors))
    CHANGES[change](tensors)
    words = Addresses(tensors, addresses_module._LAYOUT, hold=False)
    exact = list(map(_ptr, tensors)) == ptrs
    assert words.at(ptrs) is exact
    assert (change in ("none", "in place")) is exact
    # each tensor alone, too (a single moved row is found)
    for i, t in enumerate(tensors):
        one = Addresses([t], addresses_module._LAYOUT, hold=False)
        assert one.at([ptrs[i]]) is (_ptr(t) == ptrs[i])


def test_a_first_intact_takes_the_words_without_the_exact_compare(numel_on, monkeypatch):
    tensors = _tensors()
    at = AtAddresses(tensors, list(map(_ptr, tensors)), hold=True)

    def planted(*args):
        raise AssertionError("the exact compare ran")

    monkeypatch.setattr(addresses_module, "addresses_equal", planted)
    assert at.intact() and at.words is not None and at.words.kept()
    assert len(at.words.storages) == len(tensors)  # hold: the startup storages kept
    words = at.words
    assert at.intact() and at.words is words  # later checks: the gather alone


def test_a_first_intact_that_fails_by_the_words_is_decided_exactly(numel_on, monkeypatch):
    """A moved tensor before the first check: the words do not prove it, the exact compare
    says no and no word is taken; a state put back is then proven by the exact compare (the
    words' compare is made once: a failing check does not read the words each time) and its
    words taken."""
    tensors = _tensors()
    ptrs = list(map(_ptr, tensors))
    startup = tensors[2].data
    tensors[2].data = torch.ones(4)
    calls = []
    exact = addresses_module.addresses_equal
    monkeypatch.setattr(addresses_module, "addresses_equal",
                        lambda *a: calls.append(1) or exact(*a))
    at = AtAddresses(tensors, ptrs)
    read = []
    make = addresses_module.addresses
    monkeypatch.setattr(addresses_module, "addresses",
                        lambda *a, **k: read.append(1) or make(*a, **k))
    assert not at.intact() and at.words is None and calls == [1] and read == [1]
    assert not at.intact() and at.words is None and calls == [1, 1] and read == [1]
    tensors[2].data = startup
    assert at.intact() and at.words is not None and calls == [1, 1, 1] and read == [1, 1]
    assert at.words.kept()
    del startup


def test_without_the_count_word_the_exact_compare_decides(monkeypatch) -> None:
    monkeypatch.setattr(addresses_module, "_NUMEL", None)
    tensors = _tensors()
    ptrs = list(map(_ptr, tensors))
    calls = []
    exact = addresses_module.addresses_equal
    monkeypatch.setattr(addresses_module, "addresses_equal",
                        lambda *a: calls.append(1) or exact(*a))
    at = AtAddresses(tensors, ptrs)
    assert at.intact() and calls == [1]
    assert (at.words is not None) is addresses_module.AVAILABLE
    if at.words is not None:
        assert not at.words.at(ptrs)  # proves nothing without the count word


def test_the_count_word_self_test_refuses_a_wrong_word(numel_on, monkeypatch) -> None:
    assert addresses_module._numel_test() == addresses_module._NUMEL
    offset = addresses_module._LAYOUT[1]
    monkeypatch.setattr(addresses_module, "_numel_layout", lambda: offset)  # planted
    assert addresses_module._numel_test() is None


def _at_ignoring_counts(self: Addresses, ptrs) -> bool:
    """The planted bug: the element counts not read (an empty tensor's 0 address missed)."""
    import numpy as np
    impls, stores = self._expected
    offsets = np.frombuffer(impls, dtype=np.int64)[1::2]
    if offsets.any():
        return False
    return np.frombuffer(stores, dtype=np.int64).tolist() == list(ptrs)


def test_canary_a_words_compare_ignoring_counts_misses_a_tensor_resized_empty(numel_on,
                                                                              monkeypatch):
    monkeypatch.setattr(Addresses, "at", _at_ignoring_counts)  # planted
    t = torch.zeros(5)
    at = AtAddresses([t], [_ptr(t)])
    t.resize_(0)  # data_ptr() is 0 now: the exact compare says moved
    assert _ptr(t) == 0
    assert at.intact()  # the planted bug: proven at its old address


def test_canary_a_words_compare_ignoring_offsets_misses_an_offset_move(numel_on, monkeypatch):
    import numpy as np

    def planted(self: Addresses, ptrs) -> bool:
        got = np.frombuffer(self._expected[1], dtype=np.int64)
        return got.tolist() == list(ptrs)

    monkeypatch.setattr(Addresses, "at", planted)
    t = torch.zeros(8)
    at = AtAddresses([t], [_ptr(t)])
    t.set_(t.untyped_storage(), 3, (2,), (1,))  # the same storage, another offset
    assert at.intact()  # the planted bug: the offset move unseen
    assert addresses([t]) is not None
