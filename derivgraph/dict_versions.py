"""Which of many dicts changed, in one vectorised read of their PEP 509 version tags.

CPython 3.6-3.12 gives every dict a version tag (``ma_version_tag``, PEP 509) that takes a new
value on every mutation that stores, replaces or removes a value, including the specialised
attribute stores of the interpreter. Reading it for a thousand dicts one by one from Python costs
as much as comparing their items; instead, :class:`DictVersions` views the address range that
holds the watched dicts as one ``int64`` array (no copy: a ``ctypes`` array over that range) and
reads every tag with one NumPy gather (a few short C calls: right after a reload has streamed
the weights through the caches, every call's code runs cold too, and NumPy's paths are shorter
than torch's dispatcher). A tag that did not move proves its dict holds exactly the values it
held (by identity); one that moved only says "look": the caller compares that dict's items as
before.

This reads interpreter memory, so it is used only where a self-test at import proves the layout
on the running interpreter (:data:`AVAILABLE`): CPython with the GIL, and every kind of store the
test makes (insert, replace, delete, pop, clear, update, an instance attribute through a hot
specialised store, a module attribute, an ``OrderedDict``, a ``defaultdict``'s default) moves
the tag read at the expected offset. Elsewhere (CPython 3.13 keeps the field but stops moving
it, 3.14 removed it; free-threaded builds; other interpreters) :func:`watch_dicts` returns None
and callers sweep the items instead. The watched dicts are held alive by the
:class:`DictVersions`, so every address read is a live dict.
"""

from __future__ import annotations

import ctypes
import logging
import operator
import platform
import sysconfig
from collections import OrderedDict, defaultdict
from collections.abc import Sequence
from itertools import compress, count
from typing import Any

import numpy as np
import torch

__all__ = ["AVAILABLE", "DictVersions", "watch_dicts"]

logger = logging.getLogger(__name__)

_WORD = 8
#: byte offset of ``ma_version_tag`` in ``PyDictObject`` (after refcount, type, ``ma_used``)
_TAG_OFFSET = 24


def _views(dicts: Sequence[dict[Any, Any]]) -> tuple[np.ndarray, np.ndarray]:
    """An int64 view of the words spanning ``dicts`` and the index of each one's tag in it
    (the addresses read in one sweep, the indices in one NumPy pass: unsigned, as addresses
    are, so no address and no difference of two wraps)."""
    addresses = np.fromiter(map(id, dicts), dtype=np.uint64, count=len(dicts))
    low = int(addresses.min())
    words = (int(addresses.max()) - low + _TAG_OFFSET) // _WORD + 1
    span = (ctypes.c_int64 * words).from_address(low)
    view = np.frombuffer(span, dtype=np.int64)
    index = ((addresses - np.uint64(low) + np.uint64(_TAG_OFFSET))
             // np.uint64(_WORD)).astype(np.intp)
    return view, index


class DictVersions:
    """The version tags of a fixed sequence of dicts, snapshot and re-read in one gather each.

    ``changed()`` lists the positions whose tag moved since the snapshot (or the last
    ``rebase``); an empty list proves no watched dict was mutated. :meth:`adopt` takes the tags
    the last ``changed()`` read as the snapshot, without reading them again.
    """

    def __init__(self, dicts: Sequence[dict[Any, Any]]):
        self.dicts = list(dicts)  # keeps every watched dict alive
        self._view, self._index = _views(self.dicts) if self.dicts else (None, None)
        self._tags = self._read()
        self._bytes: bytes | None = None
        self._list: list[int] = []
        self._snap()
        # what the last changed() read when it found a tag moved (the tags, as bytes, as ints):
        # adopt() takes them as they are (None: that read found the snapshot, nothing to take)
        self._moved: tuple[np.ndarray, bytes, list[int]] | None = None

    def _snap(self) -> None:
        """The snapshot as bytes and as Python ints: the common check (nothing moved) is one
        bytes compare, and finding the moved ones compares ints; no ufunc (``!=``,
        ``nonzero``, ``ndarray.any``'s Python wrapper), whose code is cold after a reload
        (in situ on the tiny vLLM Llama: ~85 us a reload for the bytes, ~25 us for the ints)."""
        tags = self._tags
        self._bytes = None if tags is None else tags.tobytes()
        self._list = [] if tags is None else tags.tolist()

    def _read(self) -> np.ndarray | None:
        if self._view is None or self._index is None:
            return None
        return self._view.take(self._index)

    def __len__(self) -> int:
        return len(self.dicts)

    def unchanged(self) -> bool:
        """True when no watched dict was mutated since the snapshot."""
        return self._tags is None or self._read().tobytes() == self._bytes

    def changed(self) -> list[int]:
        """Positions (in the order given) of the dicts mutated since the snapshot."""
        if self._tags is None:
            return []
        now = self._read()
        raw = now.tobytes()
        if raw == self._bytes:
            self._moved = None
            return []
        ints = now.tolist()
        self._moved = (now, raw, ints)  # adopt() reuses this read's bytes and ints as they are
        return list(compress(count(), map(operator.ne, ints, self._list)))

    def rebase(self) -> None:
        """Take the current tags as the snapshot (after the caller checked or wrote them)."""
        self._tags = self._read()
        self._moved = None
        self._snap()

    def adopt(self) -> None:
        """Take the tags the last :meth:`changed` read as the snapshot: for a caller that
        proved those dicts and stored into none of them since (no second gather, and no
        second conversion: that read's bytes and ints are the snapshot's). A read that found
        nothing moved leaves the snapshot as it is (equal tags)."""
        moved, self._moved = self._moved, None
        if moved is not None:
            self._tags, self._bytes, self._list = moved


class _Probe:
    """A plain class for the self-test's instance-attribute stores."""


def _store(obj: Any, value: Any) -> None:
    obj.attr = value  # the interpreter specialises this store after a few runs


def _self_test() -> bool:
    """Every kind of mutation the callers rely on moves the tag read at :data:`_TAG_OFFSET`."""
    if platform.python_implementation() != "CPython" or sysconfig.get_config_var(
            "Py_GIL_DISABLED"):
        return False
    plain: dict[Any, Any] = {"a": object()}
    ordered: OrderedDict[Any, Any] = OrderedDict(a=object())
    probe = _Probe()
    probe.attr = object()
    instance = probe.__dict__
    early = _Probe()
    early.attr = object()  # stored inline before its __dict__ is made
    early_dict = early.__dict__
    module = torch.nn.Module()
    module_dict = module.__dict__
    defaulted: defaultdict[Any, Any] = defaultdict(list)
    versions = DictVersions([plain, ordered, instance, module_dict, defaulted, early_dict])

    def moved(position: int, mutate: Any) -> bool:
        versions.rebase()
        mutate()
        return versions.changed() == [position]

    steps = [
        (0, lambda: plain.__setitem__("a", object())),       # replace, same size
        (0, lambda: plain.__setitem__("b", 1)),              # insert
        (0, lambda: plain.__delitem__("b")),                 # delete
        (0, lambda: plain.update(c=2)),
        (0, lambda: plain.pop("c")),
        (0, lambda: plain.setdefault("d", 3)),
        (0, plain.clear),
        (1, lambda: ordered.__setitem__("a", object())),
        (1, lambda: ordered.pop("a")),
        (3, lambda: setattr(module, "held", torch.zeros(1))),
        (3, lambda: setattr(module, "held", object())),
        (4, lambda: defaulted.__getitem__("missing")),       # a default inserted on read
    ]
    steps += [(2, lambda: _store(probe, object())) for _ in range(24)]  # hot, specialised
    steps += [(5, lambda: _store(early, object())) for _ in range(24)]
    return all(moved(position, mutate) for position, mutate in steps)


def _available() -> bool:
    try:
        return _self_test()
    except (ValueError, TypeError, OverflowError, RuntimeError) as error:  # no such layout
        logger.debug("dict version tags unavailable: %s", error)
        return False


#: whether :class:`DictVersions` is proven on this interpreter (see the module docstring)
AVAILABLE: bool = _available()


def watch_dicts(dicts: Sequence[dict[Any, Any]]) -> DictVersions | None:
    """A :class:`DictVersions` over ``dicts`` where the tags are proven, else None."""
    if not AVAILABLE:
        return None
    return DictVersions(dicts)
