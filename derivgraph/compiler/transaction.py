"""Compile as a transaction: it either succeeds or leaves the model exactly as it was.

Before compile binds anything, :class:`ModelTransaction` records every object on the way to
every owner (its attribute dict and, for modules, its parameter, buffer and module registries)
and the values of the engine tensors it adopts (the first lowered pass writes into them).
:meth:`ModelTransaction.rollback` puts all of it back: a compile that fails after binding (in
its first lowered pass, in the bit-exactness check) leaves no derived tensor bound, no
registry changed and no adopted tensor rewritten.

An owner whose only store in the compile is one fresh name (an entry column's owner,
:class:`~derivgraph.runtime.entry_columns.EntryColumn`: the name proven in no ``__dict__`` and
no registry of it, bound as one ``__dict__`` store) is recorded as that name alone
(``fresh``): the rollback removes the name, which leaves its dict as a copy would have put it
back. Every other owner, and every object on the way to any owner, is recorded whole.

:func:`overlap_problem` is the rule that keeps the pass from ever writing a source through an
adopted tensor: storage the plan adopts (and so writes on every run or refill) may not share
memory with any source, fold source, parameter or buffer of the model other than its own slot.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

import torch
from torch import nn

from derivgraph.compiler.owners import PathReader, path_prefixes
from derivgraph.paths import MISSING

__all__ = ["ModelTransaction", "on_the_way", "overlap_problem", "source_storages"]

_REGISTRIES = ("_parameters", "_buffers", "_modules")


class ModelTransaction:
    """What compile may change on a model, recorded so that a failure can put it back."""

    def __init__(self, model: Any, owner_paths: Iterable[str],
                 adopted: Iterable[torch.Tensor], paths: PathReader | None = None,
                 fresh: Sequence[tuple[Sequence[Any], str]] = ()):
        """``paths``: a reader of ``model`` whose owners are current (nothing written to the
        model since it read them), else a fresh one. ``fresh``: (owners, name) pairs where
        ``name`` is proven in no ``__dict__`` and no registry of any of the owners and the
        compile stores it in each owner's ``__dict__`` (an entry column's bind) and nothing
        else there, unless an owner is also on the way to one of ``owner_paths`` (then it is
        recorded whole as well); the owners' own paths need not be in ``owner_paths``, but
        every object above them must be on the way to one of them."""
        self._fresh = list(fresh)
        self._dicts: list[tuple[dict[str, Any], dict[str, Any]]] = []
        seen: set[int] = set()
        if paths is None or paths.root is not model:
            paths = PathReader(model)
        for obj in on_the_way(paths, owner_paths):
            if id(obj) in seen:
                continue
            seen.add(id(obj))
            d = getattr(obj, "__dict__", None)
            if isinstance(d, dict):
                self._dicts.append((d, dict(d)))
            if isinstance(obj, nn.Module):
                self._dicts += [(d[r], dict(d[r])) for r in _REGISTRIES if r in d]
        with torch.no_grad():
            self._values = [(t, t.detach().clone()) for t in {id(t): t for t in adopted}.values()]

    def rollback(self) -> None:
        """Put back every recorded attribute, registry entry and adopted tensor value."""
        for owners, name in self._fresh:  # the name was in none of these dicts
            for owner in owners:
                owner.__dict__.pop(name, None)
        for live, saved in self._dicts:
            live.clear()
            live.update(saved)
        with torch.no_grad():
            for tensor, value in self._values:
                tensor.copy_(value)


def on_the_way(paths: PathReader, owner_paths: Iterable[str]) -> list[Any]:
    """The root and every object on each of ``owner_paths`` (as :meth:`PathReader.chain` of
    each: up to the first that is missing or None), each prefix shared by many paths read
    once, a level at a time (no path: nothing, not even the root)."""
    owner_paths = set(owner_paths)
    if not owner_paths:
        return []
    reached: dict[str, Any] = {"": paths.root}
    for prefix in sorted(path_prefixes(owner_paths), key=_depth):
        if prefix.rpartition(".")[0] in reached:  # every object above it was reached
            obj = paths.owner(prefix)
            if obj is not MISSING and obj is not None:
                reached[prefix] = obj
    return list(reached.values())


def _depth(path: str) -> int:
    return path.count(".")


def _span(t: torch.Tensor) -> tuple[int, int, int]:
    """(storage address, first byte, one past the last byte) that ``t`` can touch."""
    size = t.element_size()
    if t.numel() == 0:
        start = t.storage_offset() * size
        return t.untyped_storage().data_ptr(), start, start
    extent = sum((n - 1) * abs(s) for n, s in zip(t.shape, t.stride(), strict=True)) + 1
    start = t.storage_offset() * size
    return t.untyped_storage().data_ptr(), start, start + extent * size


def source_storages(model: nn.Module, sources: Iterable[str],
                    derived: Iterable[str]) -> dict[str, torch.Tensor]:
    """Every tensor the pass must never write, by path: the graph's and folds' sources, and
    every parameter and buffer of the model that is not itself a declared derived tensor."""
    own = set(derived)
    out = {n: t for n, t in model.named_parameters(remove_duplicate=False) if n not in own}
    out.update((n, t) for n, t in model.named_buffers(remove_duplicate=False) if n not in own)
    paths = PathReader(model)
    for src in sources:
        tensor = paths.get(src)
        if isinstance(tensor, torch.Tensor):
            out[src] = tensor
    return out


def overlap_problem(tensor: torch.Tensor, own_path: str, sources: dict[str, torch.Tensor],
                    reads: frozenset[str] = frozenset(), exact: bool = False,
                    value: torch.Tensor | None = None) -> str | None:
    """Why adopting ``tensor`` (held at ``own_path``) would let the pass write a source.

    Two layouts are allowed for an ``exact`` entry (formula-backed, equal to the engine's
    tensor bit for bit, tolerance 0), where the pass writes every source byte onto itself:
    the formula's ``value`` is a view of its source at exactly the engine tensor's place (an
    unquantized MLA's ``W_UV`` over ``kv_b_proj.weight``), or the sources the formula reads
    lie wholly inside the tensor (an engine that ``.set_()``s its weights onto a fused buffer).
    """
    if tensor.device.type == "meta":
        return None
    if exact and isinstance(value, torch.Tensor) and _span(value) == _span(tensor) and \
            value.shape == tensor.shape and value.stride() == tensor.stride():
        return None  # the formula is a view at the same place: the pass rewrites it in place
    base, start, end = _span(tensor)
    for path, src in sources.items():
        if path == own_path or src is tensor or src.device != tensor.device or \
                src.device.type == "meta":
            continue
        other, s_start, s_end = _span(src)
        if other != base or not (start < s_end and s_start < end):
            continue
        if exact and path in reads and start <= s_start and s_end <= end:
            continue  # a part of the fused tensor, rewritten with its own value
        return (f"its storage overlaps {path} (the engine's tensor is a view of it): the "
                "pass would write into that tensor on every run and refill")
    return None
