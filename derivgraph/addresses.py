"""Whether many tensors still point at their startup storage, in one NumPy gather of their words.

A tensor's data address is its storage's data address plus its storage offset. Reading it from
Python costs a call per tensor, and torch's one C++ loop (``_tensors_data_ptrs_at_indices_equal``)
still unpacks every Python tensor and every Python int: right after a reload has streamed the
weights through the caches, each of those objects is a cache miss. :class:`Addresses` reads
instead, for every tensor, the two words of its ``TensorImpl`` that hold its ``StorageImpl``
address and its storage offset, and the word of each ``StorageImpl`` that holds the data address
(two gathers over ``int64`` views of that memory, as :mod:`derivgraph.dict_versions` reads dict
tags). All three unchanged prove the data address unchanged; any word that moved (a ``.data =``,
a ``set_``, a storage resized) only says "look": the caller then compares the data addresses
exactly.

This reads torch's C++ objects, so it is used only where a self-test at import finds each word
unambiguously on the running build and proves that every kind of swap the test makes moves a
read word (:data:`AVAILABLE`); elsewhere :func:`addresses` returns None and callers compare the
data addresses. Every word read belongs to a live object: the tensors are held by the
:class:`Addresses`, and a ``StorageImpl`` is read only after every tensor's word proved it still
its tensor's storage (so held by that tensor); ``hold=True`` also keeps the startup storages
alive (the guard restores them), ``hold=False`` keeps no storage a swap released (the plan's
sources: an engine's old weights are freed as soon as it drops them).

The rule every caller follows is :class:`AtAddresses` (tensors and the data addresses they
must have): one gather of the words where they were taken, else the exact compare
(:func:`addresses_equal`, torch's one C++ loop), and the words taken once, right after an exact
compare passed (or taken from a proven check of more tensors that holds these at the same
addresses: :meth:`AtAddresses.take_words`). The first compare is made from the words just read
where they prove it (:meth:`Addresses.at`: each data address as ``data_ptr()`` computes it from
the storage's data word, the offset and the element count word; no tensor asked again), else
by torch's loop. Used by the guard (its startup tensors) and by the
plan's run-time checks (:class:`derivgraph.runtime.storage.BoundTensors`: derived tensors
re-pointed; :class:`derivgraph.runtime.holders.Holders`: sources moved).
"""

from __future__ import annotations

import ctypes
import logging
import operator
from collections.abc import Sequence
from itertools import compress
from typing import Any

import numpy as np
import torch

from derivgraph.column_layout import tensor_method

__all__ = ["AVAILABLE", "Addresses", "AtAddresses", "address_of", "addresses", "addresses_equal",
           "data_ptrs", "read_addresses"]

logger = logging.getLogger(__name__)

_WORD = 8
_data_ptr = torch.Tensor.data_ptr
_cdata = operator.attrgetter("_cdata")
#: torch's one C++ loop comparing tensors' data addresses (CUDA graph trees use it on every
#: replay): an engine's parameter subclass (vLLM's ``BasevLLMParameter``) answers ``data_ptr()``
#: through its Python ``__torch_function__``, this reads the address directly (a build without
#: it reads them one by one)
_PTRS_EQUAL = getattr(torch._C, "_tensors_data_ptrs_at_indices_equal", None)
_SEARCH = 32  # words of each object searched for a field at the self-test


def _words(address: int, count: int) -> list[int]:
    return list((ctypes.c_int64 * count).from_address(address))


def _view(addresses: list[int] | np.ndarray) -> tuple[np.ndarray, int]:
    """An int64 view of the words spanning ``addresses`` (plus a search's length) and its base."""
    if isinstance(addresses, np.ndarray):
        low, high = int(addresses.min()), int(addresses.max())
    else:
        low, high = min(addresses), max(addresses)
    words = (high - low) // _WORD + _SEARCH
    return np.frombuffer((ctypes.c_int64 * words).from_address(low), dtype=np.int64), low


def _word_index(addresses: list[int] | np.ndarray, low: int) -> np.ndarray:
    """The index of each address's first word in a view based at ``low`` (one NumPy pass)."""
    return ((np.asarray(addresses, dtype=np.int64) - low) // _WORD).astype(np.intp, copy=False)


def _only(found: list[set[int]]) -> int | None:
    """The one word index every search found, else None."""
    common = set.intersection(*found)
    return common.pop() if len(common) == 1 else None


def _layout() -> tuple[int, int, int] | None:
    """(the ``TensorImpl`` word of the ``StorageImpl`` address, the ``TensorImpl`` word of the
    storage offset, the ``StorageImpl`` word of the data address), each found unambiguously."""
    base = torch.zeros(64)
    views = [base[5:], base[9:20], torch.zeros(8)[3:]]
    storage = _only([{i for i, w in enumerate(_words(t._cdata, _SEARCH))
                      if w == t.untyped_storage()._cdata} for t in views])
    offset = _only([{i for i, w in enumerate(_words(t._cdata, _SEARCH)) if w == t.storage_offset()}
                    for t in views])
    # a storage over NumPy memory: its deleter context is not its data address
    outside = [torch.from_numpy(np.zeros(n)).untyped_storage() for n in (4, 7)]
    data = _only([{i for i, w in enumerate(_words(s._cdata, _SEARCH)) if w == s.data_ptr()}
                  for s in (*outside, base.untyped_storage())])
    if storage is None or offset is None or data is None:
        return None
    return storage, offset, data


class Addresses:
    """The startup words of a fixed sequence of tensors (see the module docstring)."""

    def __init__(self, tensors: Sequence[torch.Tensor], layout: tuple[int, int, int],
                 hold: bool = True, shared: bool = False):
        """``shared``: ``tensors`` is a list its owner never writes (an :class:`AtAddresses`'
        own): kept as it is, not copied (one list of references where there were two)."""
        # keeps every TensorImpl alive
        self.tensors = tensors if shared and type(tensors) is list else list(tensors)
        # keeps each startup StorageImpl alive (as ``t.untyped_storage()``: a class's own)
        self.storages = list(map(tensor_method(set(map(type, self.tensors)), "untyped_storage"),
                                 self.tensors)) if hold else []
        storage, offset, data = layout
        # the TensorImpl addresses as one array (its bounds and word indices in NumPy)
        impls = np.fromiter(map(_cdata, self.tensors), dtype=np.int64, count=len(self.tensors))
        self._impls, low = _view(impls)
        # each tensor's two words, in tensor order: (storage, offset) of the first, then ...
        self._impl_index = (_word_index(impls, low)[:, None]
                            + np.array([storage, offset], dtype=np.intp)).ravel()
        # one gather of those words, the startup (storage, offset) pairs; each tensor's
        # StorageImpl address is its storage word (what the self-test proved equal to
        # ``untyped_storage()._cdata``): no storage object made; a null word (a tensor without
        # a storage) is refused before any StorageImpl is read
        words = self._impls.take(self._impl_index)
        stores = words[::2]
        if not stores.all():
            raise ValueError("a tensor without a storage")
        self._stores, low = _view(stores)
        self._store_index = _word_index(stores, low) + data
        # the startup words as bytes: each check is one gather and one bytes compare (no
        # ufunc, no ``ndarray.any`` Python wrapper: ~8x the C work, and cold code after a reload)
        self._expected = (words.tobytes(), self._stores.take(self._store_index).tobytes())

    def __len__(self) -> int:
        return len(self.tensors)

    def rows(self, mask: bytes | bytearray, tensors: list[Any]) -> Addresses:
        """These words of the tensors ``mask`` marks (one byte per tensor, 1: kept, else 0), in
        order: an :class:`Addresses` over those tensors (and their held storages), no word
        read again. ``tensors``: those tensors, as the caller proved them (a list its owner
        never writes, an :class:`AtAddresses`' own: kept by the result as it is, not
        copied)."""
        keep = np.frombuffer(mask, dtype=np.bool_)
        out = Addresses.__new__(Addresses)
        out.tensors = tensors
        out.storages = list(compress(self.storages, mask)) if self.storages else []
        out._impls, out._stores = self._impls, self._stores
        out._impl_index = self._impl_index.reshape(-1, 2)[keep].ravel()
        out._store_index = self._store_index[keep]
        impls, stores = self._expected
        out._expected = (np.frombuffer(impls, dtype=np.int64).reshape(-1, 2)[keep].tobytes(),
                         np.frombuffer(stores, dtype=np.int64)[keep].tobytes())
        return out

    def ptrs(self) -> np.ndarray | None:
        """Each tensor's data address as ``data_ptr()`` computes it from the words these were
        taken with (its storage's data address plus its storage offset times its element
        size; 0 for a tensor of no element, by its element count word: one gather), as
        ``int64`` in tensor order; only a tensor at a nonzero offset is asked its element
        size. None where the count word is not proven here."""
        if _NUMEL is None or _LAYOUT is None:
            return None
        impls, stores = self._expected
        got = np.frombuffer(stores, dtype=np.int64)
        offsets = np.frombuffer(impls, dtype=np.int64)[1::2]
        shifted = np.flatnonzero(offsets)
        if len(shifted):  # a tensor at an offset: its element size asked (a view)
            got = got.copy()  # (a view of bytes: read-only)
            tensors = self.tensors
            for i in shifted.tolist():
                got[i] += int(offsets[i]) * tensors[i].element_size()
        # each tensor's element count word (the TensorImpls are held by this object)
        numels = self._impls.take(self._impl_index[::2] + (_NUMEL - _LAYOUT[0]))
        if not numels.all():  # a tensor of no element: data_ptr() is 0
            got = np.where(numels == 0, 0, got)
        return got

    def at(self, ptrs: Sequence[int]) -> bool:
        """True when every tensor's data address, as :meth:`ptrs` computes it from the words
        these were taken with, is its entry of ``ptrs``: the exact compare of
        :func:`addresses_equal`, made from these words instead of asking every tensor. False
        says only that this is not proven so (the caller compares the data addresses), also
        where the count word is not proven here."""
        if _NUMEL is None or _LAYOUT is None or len(ptrs) != len(self.tensors):
            return False
        try:
            want = np.fromiter(ptrs, dtype=np.int64, count=len(self.tensors))
        except (OverflowError, TypeError, ValueError):
            return False
        got = self.ptrs()
        return got is not None and got.tobytes() == want.tobytes()

    def kept(self) -> bool:
        """True when every word is as at the start: no tensor's data address moved. False says
        only that one may have. The storages' words are read only when every tensor still holds
        its startup ``StorageImpl`` (then each is alive, held by its tensor)."""
        impls, stores = self._expected
        return self._impls.take(self._impl_index).tobytes() == impls \
            and self._stores.take(self._store_index).tobytes() == stores


def _numel_layout() -> int | None:
    """The ``TensorImpl`` word of the element count (``numel_``), found unambiguously: views
    whose counts differ from every size, stride and offset they have, and an empty one."""
    views = [torch.zeros(3, 5), torch.zeros(2, 7), torch.zeros(4, 3)[1:], torch.zeros(6)[6:]]
    return _only([{i for i, w in enumerate(_words(t._cdata, _SEARCH)) if w == t.numel()}
                  for t in views])


def _numel_test() -> int | None:
    """The numel word where it follows every resize the test makes (else None): a tensor
    resized in place to no element reads 0 there (its ``data_ptr()`` is then 0 whatever its
    storage), and back to some elements their count."""
    word = _numel_layout()
    if word is None:
        return None
    t = torch.zeros(5)
    for size in (0, 7, 3):
        t.resize_(size)
        if _words(t._cdata, word + 1)[word] != size:
            return None
    return word


def _self_test() -> tuple[int, int, int] | None:
    """The layout, where every kind of swap the test makes is seen (else None)."""
    layout = _layout()
    if layout is None:
        return None
    tensors = [torch.zeros(6), torch.zeros(6)[2:], torch.nn.Parameter(torch.zeros(4)),
               torch.zeros(3, 3).t()]
    watch = Addresses(tensors, layout)
    tensors[0].add_(1)  # in place: nothing moves
    tensors[3].mul_(2)
    if not watch.kept():
        return None
    swaps = [
        lambda: setattr(tensors[2], "data", torch.zeros(4)),      # `.data =`: other storage
        lambda: tensors[1].set_(tensors[1].untyped_storage(), 3, (2,), (1,)),  # other offset
        lambda: tensors[0].untyped_storage().resize_(4096),       # the storage reallocated
    ]
    for swap in swaps:
        watch = Addresses(tensors, layout)
        swap()
        if watch.kept():
            return None
    return layout


def _available() -> tuple[int, int, int] | None:
    try:
        return _self_test()
    except (ValueError, TypeError, OverflowError, RuntimeError, AttributeError) as error:
        logger.debug("storage address words unavailable: %s", error)
        return None


_LAYOUT = _available()


def _numel_available() -> int | None:
    if _LAYOUT is None:
        return None
    try:
        return _numel_test()
    except (ValueError, TypeError, OverflowError, RuntimeError, AttributeError) as error:
        logger.debug("tensor element count word unavailable: %s", error)
        return None


#: the ``TensorImpl`` word of the element count where the self-test found it (else None:
#: :meth:`Addresses.at` proves nothing and callers compare the data addresses)
_NUMEL: int | None = _numel_available()

#: whether :class:`Addresses` is proven on this build (see the module docstring)
AVAILABLE: bool = _LAYOUT is not None


def addresses(tensors: Sequence[torch.Tensor], hold: bool = True,
              shared: bool = False) -> Addresses | None:
    """An :class:`Addresses` over ``tensors`` where the layout is proven, else None (also for
    no tensors, or tensors whose words cannot be viewed); ``hold``: keep the startup storages
    alive too; ``shared``: as :class:`Addresses`'."""
    if not AVAILABLE or _LAYOUT is None or not tensors:
        return None
    try:
        return Addresses(tensors, _LAYOUT, hold, shared)
    except (ValueError, OverflowError, RuntimeError) as error:  # e.g. a storage without impl
        logger.debug("storage address words not viewable here: %s", error)
        return None


_is_meta = operator.attrgetter("is_meta")


def address_of(t: Any) -> int:
    """A tensor's data pointer (what a captured graph bakes in); 0 for meta and non-tensors."""
    return t.data_ptr() if isinstance(t, torch.Tensor) and not t.is_meta else 0


def _off_meta(values: Sequence[Any], unproven: bytes | bytearray | None) -> set[type] | None:
    """The classes of ``values`` where every value is a tensor off the meta device (``unproven``:
    as :func:`data_ptrs`'), else None."""
    types = set(map(type, values))
    if all(issubclass(cls, torch.Tensor) for cls in types) and not any(map(
            _is_meta, values if unproven is None or len(unproven) != len(values)
            else compress(values, unproven))):
        return types
    return None


def data_ptrs(values: Sequence[Any], unproven: bytes | bytearray | None = None) -> list[int]:
    """:func:`address_of` of each value, in C-level sweeps when every value is a tensor off
    the meta device (the common case; ``t.data_ptr()`` by
    :func:`~derivgraph.column_layout.tensor_method` of their classes). ``unproven``: one
    byte per value, 0 where the caller proved it a tensor off the meta device (its
    ``is_meta`` not read), 1 elsewhere."""
    types = _off_meta(values, unproven)
    if types is not None:
        return list(map(tensor_method(types, "data_ptr"), values))
    return list(map(address_of, values))


def read_addresses(values: Sequence[Any], unproven: bytes | bytearray | None = None,
                   ) -> tuple[list[int], Addresses | None]:
    """:func:`data_ptrs` of ``values``, and the words they were computed from: where every
    value is a plain tensor or parameter (``data_ptr()`` is ``torch.Tensor``'s) off the meta
    device and the words are proven here, each address is what :meth:`Addresses.ptrs` gives
    from one read of every value's words (no tensor asked; an :class:`Addresses` holding no
    storage), and those words come back with them: words of a state at exactly these
    addresses (a check of these tensors at them is offered them: :meth:`AtAddresses.offer`).
    Else the addresses as :func:`data_ptrs` reads them, and None."""
    types = _off_meta(values, unproven) if _NUMEL is not None else None
    if types is not None and tensor_method(types, "data_ptr") is _data_ptr:
        words = addresses(values, hold=False)
        got = None if words is None else words.ptrs()
        if got is not None:
            return got.tolist(), words
    return data_ptrs(values, unproven), None


def addresses_equal(tensors: list[Any], ptrs: list[int], indices: list[int] | None = None) \
        -> bool:
    """Every tensor's data address is its entry of ``ptrs`` (exact; ``indices``:
    ``range(len(ptrs))``, passed by a caller that keeps it)."""
    if _PTRS_EQUAL is not None and len(tensors) == len(ptrs):
        return bool(_PTRS_EQUAL(tensors, ptrs,
                                list(range(len(ptrs))) if indices is None else indices))
    return list(map(_data_ptr, tensors)) == ptrs


class AtAddresses:
    """Tensors that must be at fixed data addresses: :meth:`intact` says whether they are.

    One gather of the tensors' storage words (:class:`Addresses`) where those were taken; else,
    or when a word moved, the addresses compared exactly (:func:`addresses_equal`). The words
    are taken once, right after the first exact compare that passed (so they describe a state
    proven at the expected addresses; that first compare is made from freshly read words where
    :meth:`Addresses.at` proves it, else by :func:`addresses_equal`), and never again: a later
    exact pass (the tensors put back) does not retake them, they are still the proven startup
    words. ``hold``: the words keep the startup storages alive (the guard restores them);
    ``False`` keeps none (an engine's dropped weights are freed). ``tensors`` and ``ptrs``
    given as lists are kept as they are, not copied: every caller hands lists that no one
    writes (its own fresh ones, or a table's read-only columns), and this object and the
    words it takes only read them (and hand them out read only: :attr:`ptrs`)."""

    __slots__ = ("tensors", "ptrs", "words", "_indices", "_hold", "_taken", "_tried", "_offered")

    def __init__(self, tensors: Sequence[Any], ptrs: Sequence[int], *, hold: bool = False):
        self.tensors = tensors if type(tensors) is list else list(tensors)
        self.ptrs = ptrs if type(ptrs) is list else list(ptrs)
        self.words: Addresses | None = None
        # ``range(len(ptrs))`` for the exact compare, made by its first call (a check whose
        # words pass never makes it)
        self._indices: list[int] | None = None
        self._hold = hold
        self._taken = False
        self._tried = False  # the words' first compare made (once: see intact)
        self._offered: Addresses | None = None  # words read earlier, for it (:meth:`offer`)

    def __len__(self) -> int:
        return len(self.tensors)

    def intact(self) -> bool:
        """Every tensor at its expected data address (see the class docstring)."""
        words = self.words
        if words is not None and words.kept():
            return True
        if not self._tried and not self._taken and _NUMEL is not None:
            # the first compare, made from the words themselves (:meth:`Addresses.at`: the
            # data addresses they give, exact): where it passes, they are the words of a
            # state just proven at the expected addresses; else the exact compare decides,
            # from then on too (a check that fails is not made to read the words each time)
            self._tried = True
            words, self._offered = self._offered, None
            if words is not None and not words.kept():  # offered: unchanged now, else none
                words = None
            elif words is None:
                words = addresses(self.tensors, hold=self._hold, shared=True)
            if words is not None and words.at(self.ptrs):
                self.words, self._taken = words, True
                return True
        indices = self._indices
        if indices is None:
            indices = self._indices = list(range(len(self.ptrs)))
        if not addresses_equal(self.tensors, self.ptrs, indices):
            return False
        if not self._taken:  # the words of a state just proven (None where unproven)
            self.words = addresses(self.tensors, hold=self._hold, shared=True)
            self._taken = True
        return True

    def proven(self) -> bool:
        """Every tensor at its expected data address by the words alone (one gather), where
        they were taken; False says only that this is not proven so (no exact compare)."""
        words = self.words
        return words is not None and words.kept()

    def offer(self, words: Addresses | None) -> bool:
        """Offer ``words`` read earlier (e.g. by :func:`read_addresses`) to this check's first
        compare (:meth:`intact`), where it has made none and taken no words, they hold
        storages as this one would, and they are the words of this check's very tensors, in
        order (one identity sweep; words of more tensors after them: their rows taken, no
        word read). That compare then reads no words: it takes these where they are
        unchanged now (one gather) and give this check's addresses (:meth:`Addresses.at`),
        so they are the words of a state just proven at them, as freshly read ones would be;
        else it decides as without them. Whether offered (else nothing changed)."""
        n = len(self.tensors)
        if self._taken or self._tried or words is None or bool(words.storages) != self._hold \
                or not n or len(words) < n:
            return False
        if not all(map(operator.is_, words.tensors, self.tensors)):  # its first n
            return False
        if len(words) > n:
            words = words.rows(b"\x01" * n + bytes(len(words) - n), self.tensors)
        self._offered = words
        return True

    def take_words(self, proven: AtAddresses, mask: bytes | bytearray) -> bool:
        """Take this check's words from ``proven``'s (:meth:`Addresses.rows`: no word read),
        where this check has taken none, ``proven`` has its words (taken right after its exact
        compare passed) and holds storages as this one would, and the tensors ``mask`` marks
        of ``proven`` (one byte per tensor, 1 or 0) are this check's very tensors, in order,
        with this check's addresses (one identity sweep, one compare): those words then
        describe a state proven at this check's addresses. Whether taken (else nothing
        changed)."""
        words = proven.words
        if self._taken or words is None or proven._hold != self._hold \
                or len(mask) != len(proven.tensors) or mask.count(0) != len(mask) - len(self):
            return False
        if not all(map(operator.is_, compress(proven.tensors, mask), self.tensors)) \
                or list(compress(proven.ptrs, mask)) != self.ptrs:
            return False
        self.words, self._taken = words.rows(mask, self.tensors), True
        return True
