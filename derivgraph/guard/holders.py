"""Where each reachable tensor is held, and how to point a holder at another tensor.

:func:`held_tensors` is the runtime census walk (:mod:`derivgraph.audit.runtime.census`: the one
walk over attributes, containers, ``functools.partial`` args, closure cells, defaults and nested
objects) that also keeps, for every tensor, the objects holding it and the path piece each
holds it under. :func:`repoint` writes a tensor back into one such place.

Places a holder cannot be re-pointed through (tuple items, inner tensors of a wrapper subclass,
properties without a setter) answer :class:`Repoint.FIXED`; the caller still has the value.
"""

from __future__ import annotations

import ast
import enum
import functools
import re
import types
from collections import deque
from collections.abc import Mapping, MutableMapping
from dataclasses import dataclass, field
from typing import Any

import torch
from torch import nn

from derivgraph.audit.runtime.objects import key_piece
from derivgraph.audit.runtime.records import Census
from derivgraph.audit.runtime.walk import Walker, gc_paused

__all__ = ["MISSING", "Held", "Repoint", "held_tensors", "lookup", "path_of", "repoint"]

#: What :func:`lookup` answers for a place that holds nothing.
MISSING: Any = object()


@dataclass
class Held:
    """One tensor: its paths (canonical first), every ``(holder, piece)`` holding it, and for
    each hold the chain of pieces from the root to it (the holder's canonical path, then the
    piece): what :func:`lookup` follows to find the slot again without a walk."""

    tensor: torch.Tensor
    paths: list[str]
    holds: list[tuple[Any, str]] = field(default_factory=list)
    chains: list[tuple[str, ...]] = field(default_factory=list)


class _HolderWalker(Walker):
    """The census walk, recording holders instead of census entries."""

    def __init__(self, **bounds: int) -> None:
        super().__init__(Census(), fingerprints=False, floats=False, ints=False,
                         keep_values=True, **bounds)
        self.found: dict[int, torch.Tensor] = {}

    def record_tensor(self, cid: int, path: str, t: torch.Tensor, kind: str,
                      holder: Any) -> None:
        self.found[cid] = t

    def record_scalar(self, path: str, value: float | int, kind: str, holder: Any) -> None:
        return

    def _piece(self, cid: int) -> str:
        node = self.nodes[cid]
        parent_path = self.nodes[node.parent].path
        if parent_path:
            return node.path[len(parent_path):]
        return node.path if node.path.startswith("[") else "." + node.path

    def chain(self, cid: int, memo: dict[int, tuple[str, ...]]) -> tuple[str, ...]:
        """The pieces of ``cid``'s canonical path, root first."""
        if cid not in memo:
            node = self.nodes[cid]
            memo[cid] = () if not node.parent else (*self.chain(node.parent, memo),
                                                    self._piece(cid))
        return memo[cid]

    def held(self) -> list[Held]:
        memo: dict[int, list[str]] = {}
        chains: dict[int, tuple[str, ...]] = {}
        out = []
        for cid, t in self.found.items():
            node = self.nodes[cid]
            edges = [(node.parent, self._piece(cid)), *node.extra]
            out.append(Held(t, self.paths_of(cid, memo, set()),
                            [(self.objs[parent], piece) for parent, piece in edges],
                            [(*self.chain(parent, chains), piece) for parent, piece in edges]))
        return out


def held_tensors(model: Any, *, max_depth: int = 12, max_objects: int = 500_000,
                 max_aliases: int = 16) -> tuple[list[Held], bool]:
    """Every tensor reachable from ``model`` with its paths and holders; reads only.

    Returns the tensors and whether ``max_objects`` cut the walk short.
    """
    walker = _HolderWalker(max_depth=max_depth, max_objects=max_objects,
                           max_aliases=max_aliases)
    with torch.no_grad(), gc_paused():
        walker.walk(model)
        return walker.held(), walker.census.truncated


class Repoint(enum.Enum):
    """What :func:`repoint` did."""

    DONE = "re-pointed"
    FIXED = "holder cannot be re-pointed"  # an immutable place: the value is copied only


_INDEX = re.compile(r"^\[(\d+)\]$")
_PARTIAL_ARG = re.compile(r"^\.partial\.args\[(\d+)\]$")
_PARTIAL_KW = re.compile(r"^\.partial\.keywords\[(.+)\]$")
_DEFAULT = re.compile(r"^\.defaults\[(\d+)\]$")
_KWDEFAULT = re.compile(r"^\.kwdefaults\[(.+)\]$")


def lookup(holder: Any, piece: str) -> Any:
    """What ``holder`` holds under ``piece`` (a census path piece), or :data:`MISSING`."""
    try:
        if isinstance(holder, functools.partial):
            if piece == ".partial.func":
                return holder.func
            match = _PARTIAL_ARG.match(piece)
            if match:
                return holder.args[int(match.group(1))]
            kw = _PARTIAL_KW.match(piece)
            return (holder.keywords or {}).get(ast.literal_eval(kw.group(1)), MISSING) \
                if kw else MISSING
        if isinstance(holder, types.FunctionType):
            if piece.startswith(".closure."):
                index = holder.__code__.co_freevars.index(piece[len(".closure."):])
                return holder.__closure__[index].cell_contents  # type: ignore[index]
            match = _DEFAULT.match(piece)
            if match:
                return (holder.__defaults__ or ())[int(match.group(1))]
            kw = _KWDEFAULT.match(piece)
            return (holder.__kwdefaults__ or {}).get(ast.literal_eval(kw.group(1)), MISSING) \
                if kw else MISSING
        if piece.startswith("["):
            if isinstance(holder, Mapping):
                for i, key in enumerate(list(holder)):
                    if key_piece(key, i) == piece:
                        return holder[key]
                return MISSING
            match = _INDEX.match(piece)
            return holder[int(match.group(1))] if match else MISSING
        name = piece[1:]
        if isinstance(holder, nn.Module):
            d = holder.__dict__
            for registry in (d["_parameters"], d["_buffers"], d["_modules"]):
                if name in registry:
                    return registry[name]
            return d.get(name, MISSING)
        state = getattr(holder, "__dict__", None)
        if isinstance(state, dict) and name in state:
            return state[name]
        return getattr(holder, name, MISSING)
    except (IndexError, KeyError, ValueError, TypeError, AttributeError, SyntaxError):
        return MISSING  # the place is gone (a shorter list, an emptied cell...)


def _set_item(holder: Any, piece: str, value: Any) -> Repoint:
    if isinstance(holder, MutableMapping):
        for i, key in enumerate(list(holder)):
            if key_piece(key, i) == piece:
                holder[key] = value
                return Repoint.DONE
        return Repoint.FIXED
    match = _INDEX.match(piece)
    if match and isinstance(holder, (list, deque)):
        holder[int(match.group(1))] = value
        return Repoint.DONE
    return Repoint.FIXED  # tuples and read-only mappings


def _set_partial(holder: functools.partial, piece: str, value: Any) -> Repoint:
    func, args, keywords = holder.func, list(holder.args), dict(holder.keywords or {})
    match = _PARTIAL_ARG.match(piece)
    if match:
        args[int(match.group(1))] = value
    else:
        kw = _PARTIAL_KW.match(piece)
        if kw is None:
            return Repoint.FIXED
        keywords[ast.literal_eval(kw.group(1))] = value
    holder.__setstate__((func, tuple(args), keywords, holder.__dict__ or None))
    return Repoint.DONE


def _set_function(holder: types.FunctionType, piece: str, value: Any) -> Repoint:
    if piece.startswith(".closure."):
        name = piece[len(".closure."):]
        cell = holder.__closure__[holder.__code__.co_freevars.index(name)]  # type: ignore[index]
        cell.cell_contents = value
        return Repoint.DONE
    match = _DEFAULT.match(piece)
    if match:
        defaults = list(holder.__defaults__ or ())
        defaults[int(match.group(1))] = value
        holder.__defaults__ = tuple(defaults)
        return Repoint.DONE
    kw = _KWDEFAULT.match(piece)
    if kw and holder.__kwdefaults__ is not None:
        holder.__kwdefaults__[ast.literal_eval(kw.group(1))] = value
        return Repoint.DONE
    return Repoint.FIXED


def _set_attribute(holder: Any, name: str, value: Any) -> Repoint:
    if isinstance(holder, nn.Module):
        for registry in (holder._parameters, holder._buffers):
            if name in registry:
                registry[name] = value  # a buffer keeps its persistence: the set is by name
                return Repoint.DONE
        holder.__dict__[name] = value
        return Repoint.DONE
    if isinstance(holder, torch.Tensor):
        if name not in holder.__dict__:
            return Repoint.FIXED  # an inner tensor of a wrapper subclass
        holder.__dict__[name] = value
        return Repoint.DONE
    state = getattr(holder, "__dict__", None)
    if isinstance(state, dict) and name in state:
        state[name] = value
        return Repoint.DONE
    try:
        object.__setattr__(holder, name, value)  # __slots__ and frozen dataclasses
    except (AttributeError, TypeError):
        return Repoint.FIXED
    return Repoint.DONE


def path_of(chain: tuple[str, ...]) -> str:
    """The census path a chain of pieces spells (``('.layers', '.0', '.w')`` -> ``layers.0.w``)."""
    path = "".join(chain)
    return path[1:] if path.startswith(".") else path


def repoint(holder: Any, piece: str, value: Any) -> Repoint:
    """Make ``holder`` hold ``value`` where it holds something under ``piece`` (a census path
    piece: ``.name``, ``[0]``, ``['key']``, ``.partial.args[0]``, ``.closure.name``...)."""
    if isinstance(holder, functools.partial):
        return _set_partial(holder, piece, value)
    if isinstance(holder, types.FunctionType):
        return _set_function(holder, piece, value)
    if piece.startswith("["):
        return _set_item(holder, piece, value)
    if isinstance(holder, Mapping) or not piece.startswith("."):
        return Repoint.FIXED
    return _set_attribute(holder, piece[1:], value)
