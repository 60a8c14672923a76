"""The guard's chains as precompiled accessors: "nothing changed" in a few C-level sweeps.

After a reload that rebuilt nothing the guard keeps (the common case once a plan re-binds its
declared tensors), :meth:`Guard.restore` would follow every chain piece by piece only to find
every slot holding its startup tensor. :class:`SlotTable` resolves, once, each hop of every
chain (an object on the way, or the slot itself) into a ``(dict, key)`` pair where
:func:`~derivgraph.guard.holders.lookup` reads a dict entry (a module's registries or
``__dict__``, a plain object's ``__dict__``, a ``dict`` item under a string key); the rest
(list items, closure cells, partials) are looked up one by one. :meth:`SlotTable.unchanged`
is then one identity sweep over the hops, one over the slots and one address sweep over the
startup tensors. It answers True only when the chain-following restore would find nothing to
do; anything else takes that restore, the reference.
"""

from __future__ import annotations

import operator
from collections.abc import Mapping
from typing import Any

import torch
from torch import nn

from derivgraph.guard.holders import lookup

__all__ = ["SlotTable"]

_is = operator.is_
_data_ptr = torch.Tensor.data_ptr
_REGISTRIES = ("_parameters", "_buffers", "_modules")


def accessor(holder: Any, piece: str) -> tuple[dict[Any, Any], Any, str | None] | None:
    """The dict entry :func:`lookup` reads for ``holder`` and ``piece`` (and the name of the
    module registry that dict is, if it is one), or None."""
    if piece.startswith("["):
        if type(holder) is dict:  # noqa: E721 - a subclass may override item access
            for key in holder:
                if isinstance(key, str) and f"[{key!r}]" == piece:
                    return holder, key, None
        return None
    if not piece.startswith(".") or isinstance(holder, Mapping):
        return None
    name = piece[1:]
    if isinstance(holder, nn.Module):  # lookup's order: the registries, then __dict__
        d = holder.__dict__
        for registry in _REGISTRIES:
            if name in d[registry]:
                return d[registry], name, registry
        return (d, name, None) if name in d else None
    state = getattr(holder, "__dict__", None)
    if type(state) is dict and name in state:  # noqa: E721 - lookup reads it first
        return state, name, None
    return None


class SlotTable:
    """Every hop of the guard's chains, and the startup tensors' addresses, resolved once."""

    __slots__ = ("dicts", "keys", "expected", "slow", "tensors", "ptrs")

    def __init__(self, objects: Mapping[tuple[str, ...], Any],
                 slots: list[tuple[tuple[str, ...], Any]],
                 addresses: list[tuple[torch.Tensor, int]]):
        """``objects``: every object on a chain by its chain (the root at ``()``), as at the
        snapshot; ``slots``: (chain, startup tensor) per holder; ``addresses``: (startup
        tensor, its startup address) where the guard checks the address."""
        self.dicts: list[dict[Any, Any]] = []
        self.keys: list[Any] = []
        self.expected: list[Any] = []
        self.slow: list[tuple[Any, str, Any]] = []  # (holder, piece, expected): one by one
        hops = [(chain, obj) for chain, obj in objects.items() if chain]
        for chain, obj in [*hops, *slots]:
            holder, piece = objects[chain[:-1]], chain[-1]
            where = accessor(holder, piece)
            if where is None:
                self.slow.append((holder, piece, obj))
                continue
            d, key, registry = where
            if registry is not None:  # the module still has that registry dict
                self._add(holder.__dict__, registry, d)
            self._add(d, key, obj)
        self.tensors = [t for t, _ in addresses]
        self.ptrs = [p for _, p in addresses]

    def _add(self, d: dict[Any, Any], key: Any, expected: Any) -> None:
        self.dicts.append(d)
        self.keys.append(key)
        self.expected.append(expected)

    def unchanged(self) -> bool:
        """Every object on every chain and every slot is the snapshot's, and every startup
        tensor is at its startup address."""
        return all(map(_is, map(dict.get, self.dicts, self.keys), self.expected)) \
            and all(lookup(holder, piece) is obj for holder, piece, obj in self.slow) \
            and list(map(_data_ptr, self.tensors)) == self.ptrs
