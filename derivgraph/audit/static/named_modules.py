"""Which reading module the storing module names through a registry of implementations.

A store onto an object handed in from outside (``setattr(attn, "_k_scale", scale)``, ``attn``
a layer found by name) is read by whichever implementation serves that object: every backend
that reads ``layer._k_scale`` fits the text equally. When the storing module names one of them
by its registry name (``TRITON_ATTN``, registered as ``TRITON_ATTN =
"pkg.backends.triton_attn.TritonAttentionBackend"``), the reads in that module are the ones
that serve it (:func:`named_files`); the module named most often wins a tie.
"""

from __future__ import annotations

import collections
import re
from collections.abc import Callable, Iterable, Sequence
from typing import Protocol, TypeVar

__all__ = ["named_files"]

_T = TypeVar("_T")
_REGISTRY_NAME = re.compile(r"\b[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+\b")
"""A registry name: upper case words joined by underscores (``TRITON_ATTN``)."""


class Index(Protocol):
    """What this module reads of :class:`.readers.ReaderIndex`."""

    files: Sequence[tuple[str, str]]

    def memo(self, key: str, make: Callable[[], _T]) -> _T: ...

    def files_naming(self, name: str) -> list[int]: ...


def _registered(index: Index, i: int) -> frozenset[str]:
    """The registry names bound to a class of scanned file ``i`` (``NAME = "a.b.mod.Class"``,
    ``Class`` defined in the file, in a file whose text names ``.mod`` and ``.Class``;
    ``a.b.mod`` the end of the file's dotted path: the scan may start above the package),
    memoized."""
    shown, text = index.files[i]
    module = shown.removesuffix(".py").replace("/", ".")
    stem = module.rsplit(".", 1)[-1]

    def find() -> frozenset[str]:
        names: set[str] = set()
        naming_stem = set(index.files_naming(stem))
        for cls in re.findall(r"^class[ \t]+(\w+)", text, re.M):
            for k in naming_stem.intersection(index.files_naming(cls)):
                other = index.files[k][1]
                if f".{cls}\"" in other or f".{cls}'" in other:
                    line = re.compile(rf"^[ \t]*({_REGISTRY_NAME.pattern})[ \t]*=[ \t]*"
                                      rf"[\"']((?:\w+\.)*{re.escape(stem)})\.{cls}[\"']", re.M)
                    names.update(m.group(1) for m in line.finditer(other)
                                 if f".{module}".endswith(f".{m.group(2)}"))
        return frozenset(names)

    return index.memo(f"registered {shown}", find)


def named_files(index: Index, at: int, candidates: Iterable[int]) -> frozenset[int]:
    """The files of ``candidates`` whose registry name the storing file ``at`` names most often
    (empty when it names none of them)."""
    names = index.memo(f"registry names {at}", lambda: collections.Counter(
        _REGISTRY_NAME.findall(index.files[at][1])))
    if not names:
        return frozenset()
    counts = {i: sum(names[n] for n in _registered(index, i)) for i in set(candidates)}
    top = max(counts.values(), default=0)
    return frozenset(i for i, c in counts.items() if c and c == top)
