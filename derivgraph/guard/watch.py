"""The guard's precompiled watch: every holder on a guarded chain checked in a few C-level sweeps.

At the snapshot, every object on a chain to a guarded tensor keeps its containers as live views
(a module's ``__dict__``, ``_parameters``, ``_buffers`` and ``_modules``, a plain object's
``__dict__``, a dict, a list) with the keys and values they held. :meth:`Watch.survey` compares
them all with one sweep of lengths, one of value identities and one of keys (in address order:
neighbours share cache lines and pages; :mod:`derivgraph.guard.sweep`): an unchanged container
proves that nothing in it was rebound, removed or added. A place off every chain whose snapshot
value held no tensor keeps its template (:func:`~derivgraph.guard.template.value_template`):
a new value there that provably holds none either (an atom; a rebuilt closure or partial of the
same code and cell classes) is no change, and a dict that only gained such values is re-based.
Only the changed ones are looked at, by place:

* a guarded slot holding another value: handed to the guard to classify (with a direct
  ``(container, key)`` store for re-pointing it);
* an object on a chain the engine rebuilt: matched against the snapshot object's template (same
  class, same keys; every other value an atom or an object the walk already knows) and
  descended; what does not match is resolved by its chains and walked whole for new tensors. A
  plain object is matched by its node's :class:`~derivgraph.guard.template.Template` in a few
  C calls (keys, the classes of the values that held no tensor), and a guarded slot in it still
  holding its startup tensor is not handed on (its storage is swept with every startup tensor's);
* anything else that changed and may hold tensors: walked for new tensors.

Objects the watch cannot see through (tuples are immutable; partials, functions, tensors with
attributes, ``__slots__`` objects and other mappings) have each of their chain places looked up
on every survey instead.
"""

from __future__ import annotations

import enum
import functools
import operator
import types
from collections import OrderedDict, defaultdict
from dataclasses import dataclass, field, fields, is_dataclass
from itertools import compress
from typing import Any, NamedTuple

import torch
from torch import nn

from derivgraph.audit.runtime.objects import MODULE_INTERNALS, key_piece, leaf_kind
from derivgraph.guard.holders import MISSING, lookup
from derivgraph.guard.sweep import Sweep
from derivgraph.guard.template import NO_TENSORS, Template, harmless, template_of, value_template

#: module ``__dict__`` keys not swept item by item; the three registries are (a replaced
#: ``_buffers`` dict is a change even though the old dict is untouched)
_BOOKKEEPING = MODULE_INTERNALS - {"_parameters", "_buffers", "_modules"}

__all__ = ["NOTHING", "Chain", "Edge", "Node", "Place", "Survey", "Template", "Watch"]

Chain = tuple[str, ...]
Store = tuple[Any, Any] | None  # (container, key): a direct store that re-points the place

_is, _not = operator.is_, operator.not_
_REGISTRIES = ("_parameters", "_buffers", "_modules")
_DICTS = (dict, OrderedDict, defaultdict)
_CALLABLES = (functools.partial, types.FunctionType, types.MethodType, types.BuiltinFunctionType)


class Kind(enum.Enum):
    """How the watch sees an object on a chain."""

    MODULE = enum.auto()  # __dict__ and the three registries
    OBJECT = enum.auto()  # a plain object whose every field is in its __dict__
    DICT = enum.auto()
    LIST = enum.auto()
    TUPLE = enum.auto()   # immutable: a kept tuple holds what it held
    OPAQUE = enum.auto()  # chain places looked up one by one


def _kind(obj: Any) -> Kind:
    if isinstance(obj, nn.Module):
        return Kind.MODULE
    if type(obj) is list:
        return Kind.LIST
    if type(obj) is tuple:
        return Kind.TUPLE
    if type(obj) in _DICTS and all(key_piece(k, 0) for k in obj):  # no tensor keys
        return Kind.DICT
    if isinstance(obj, (torch.Tensor, tuple, dict, *_CALLABLES)):
        return Kind.OPAQUE
    state = getattr(obj, "__dict__", None)
    if type(state) is not dict or any(
            name not in ("__dict__", "__weakref__")
            for klass in type(obj).__mro__ for name in getattr(klass, "__slots__", ())):
        return Kind.OPAQUE
    if is_dataclass(obj) and any(f.name not in state for f in fields(obj)):
        return Kind.OPAQUE
    return Kind.OBJECT


def _containers(obj: Any, kind: Kind) -> list[Any]:
    if kind is Kind.MODULE:
        d = obj.__dict__
        return [d, *(d[r] for r in _REGISTRIES)]
    if kind is Kind.OBJECT:
        return [obj.__dict__]
    if kind in (Kind.DICT, Kind.LIST):
        return [obj]
    return []


def _piece(kind: Kind, key: Any, index: int) -> str | None:
    if kind is Kind.DICT:
        return key_piece(key, index)
    if kind is Kind.LIST or kind is Kind.TUPLE:
        return f"[{index}]"
    return "." + key if isinstance(key, str) else None


def _place(obj: Any, kind: Kind, piece: str) -> tuple[Any, Store]:
    """What ``obj`` holds under ``piece`` now, and the direct store that re-points it there
    exactly as :func:`~derivgraph.guard.holders.repoint` would (None: use repoint)."""
    if kind is Kind.MODULE or kind is Kind.OBJECT:
        name = piece[1:]
        if kind is Kind.MODULE:
            d = obj.__dict__
            for registry in (d["_parameters"], d["_buffers"], d["_modules"]):
                if name in registry:
                    return registry[name], (registry, name)
        else:
            d = obj.__dict__
        if name in d:
            return d[name], (d, name)
    elif kind is Kind.LIST:
        i = int(piece[1:-1])
        return (obj[i], (obj, i)) if i < len(obj) else (MISSING, None)
    return lookup(obj, piece), None


@dataclass
class Node:
    """An object on a chain, as it was at the snapshot."""

    chain: Chain
    obj: Any
    kind: Kind
    edges: dict[str, Edge]   # piece -> the next chain, its guarded slot, its object's node
    first: int = 0           # its containers: [first, first + count) in the watch's arrays
    count: int = 0
    looked: list[str] = field(default_factory=list)  # pieces looked up one by one
    expected: list[Any] = field(default_factory=list)  # what each looked piece held
    pieces: list[tuple[str | None, ...]] = field(default_factory=list)  # per container key
    template: Template | None = None  # a plain object's fast check when the engine rebuilds it
    harmless: dict[str, Any] = field(default_factory=dict)  # piece -> value template (off chain)


class Edge(NamedTuple):
    """Where a piece of a node leads: the chain, the guarded slot's payload (None: not a
    guarded slot), and the node of the object there (None: not an object on a chain)."""

    chain: Chain
    slot: Any
    node: Node | None


class Place(NamedTuple):
    """A place holding ``value`` now, in ``holder`` under ``piece``: a guarded slot (``slot``:
    its payload) or an unguarded place (``slot`` is its chain)."""

    slot: Any
    value: Any
    holder: Any
    piece: str
    store: Store = None


@dataclass
class Survey:
    """What changed since the snapshot, found by :meth:`Watch.survey`."""

    places: list[Place] = field(default_factory=list)        # guarded slots to classify
    gone: list[Any] = field(default_factory=list)  # payloads of guarded slots now gone
    loose: list[Place] = field(default_factory=list)          # tensors at unguarded places
    roots: list[tuple[Chain, Any]] = field(default_factory=list)  # objects to walk whole


#: the survey of a reload that changed nothing (read only; the guard never adds to a survey
#: it is handed): the common reload builds no Survey
NOTHING = Survey()


class Watch:
    """The containers of every object on a chain (see the module docstring)."""

    def __init__(self, objects: dict[Chain, Any], finals: dict[Chain, Any]):
        self.finals = finals  # each guarded chain and its payload (handed back in a Place)
        self.nodes: dict[Chain, Node] = {}
        self.below: dict[Chain, list[Chain]] = {c: [] for c in objects}
        for final in self.finals:
            for cut in range(len(final)):
                self.below[final[:cut]].append(final)
        self.sweep = sweep = Sweep()
        self.live, self.keys, self.values = sweep.live, sweep.keys, sweep.values
        self.owner: list[Node] = []
        for chain_, obj in objects.items():
            self.nodes[chain_] = Node(chain_, obj, _kind(obj), {})
        for target in (*self.finals, *objects):
            if target:
                node = self.nodes.get(target[:-1])
                if node is not None:
                    node.edges[target[-1]] = Edge(target, finals.get(target),
                                                  self.nodes.get(target))
        for node in self.nodes.values():
            self._watch(node)
        sweep.seal()
        self.opaque = [n for n in self.nodes.values() if n.looked]
        self._node_ids = {id(n.obj) for n in self.nodes.values()}

    def _watch(self, node: Node) -> None:
        containers = _containers(node.obj, node.kind)
        node.first, node.count = len(self.live), len(containers)
        held: set[str] = set()
        for c in containers:
            self.owner.append(node)
            if not isinstance(c, dict):
                self.sweep.add(c, None)
                held |= {f"[{i}]" for i in range(len(c))}
                continue
            internals = node.kind is Kind.MODULE and c is node.obj.__dict__
            pieces = tuple(_piece(node.kind, k, i) for i, k in enumerate(c))
            node.pieces.append(pieces)
            held |= {p for p in pieces if p}
            self.sweep.add(c, self._items(node, internals, c, pieces, c.keys()))
        if node.kind is not Kind.TUPLE:
            node.looked = [p for p in node.edges if p not in held]
            node.expected = [lookup(node.obj, p) for p in node.looked]
        if node.kind is Kind.OBJECT:
            node.template = self._template(node)

    def _items(self, node: Node, internals: bool, c: dict[Any, Any],
               pieces: tuple[str | None, ...], keys: Any) -> list[tuple[Any, Any, Any]]:
        """The swept items of ``c`` among ``keys`` (key, value, value template): a value off every
        chain that held no tensor gets a template (recorded on the node by piece too)."""
        items = []
        for k, piece in zip(keys, pieces):
            if internals and k in _BOOKKEEPING:  # a module's hooks and flags
                continue
            v = c[k]
            template = None
            if piece is not None and piece not in node.edges:
                template = value_template(v)
                if template is not None:
                    node.harmless[piece] = template
            items.append((k, v, template))
        return items

    def _template(self, node: Node) -> Template:
        return template_of(node.pieces[0], self.keys[node.first], self.values[node.first],
                           node.edges)

    # ---- the sweep -----------------------------------------------------------------------------

    def _dirty(self) -> set[int]:
        """Indices of the containers that changed (:meth:`Sweep.dirty`); a dict that only
        gained keys off every chain holding values that provably hold no tensor is re-based
        instead (vLLM's layerwise reload adds two flags to the model on its first reload)."""
        dirty, resized = self.sweep.dirty()
        for i in resized:
            if not self._grown(i):
                dirty.add(i)
        return dirty

    def _grown(self, i: int) -> bool:
        """Re-base dict ``i`` when it only gained such keys (see :meth:`_dirty`)."""
        added = self.sweep.appended(i)
        node = self.owner[i]
        if added is None or node.kind not in (Kind.MODULE, Kind.OBJECT, Kind.DICT):
            return False
        c, start = self.live[i], len(self.keys[i])
        pieces = tuple(_piece(node.kind, k, start + j) for j, k in enumerate(added))
        if any(p is None or p in node.edges for p in pieces):
            return False
        internals = node.kind is Kind.MODULE and c is node.obj.__dict__
        items = self._items(node, internals, c, pieces, added)
        if any(template is None for _k, _v, template in items):
            return False
        self.sweep.grow(i, items)
        node.pieces[i - node.first] += pieces
        if node.kind is Kind.OBJECT:
            node.template = self._template(node)
        return True

    def survey(self) -> Survey:
        """Every change under the model since the snapshot (reads the model only; may re-base
        the watch, see :meth:`_dirty`)."""
        dirty = self._dirty()
        if not dirty and not self.opaque:  # the common reload: nothing to look at
            return NOTHING
        out = Survey()
        todo = {id(self.owner[i]): self.owner[i] for i in sorted(dirty)}
        todo.update((id(n), n) for n in self.opaque)
        if not todo:
            return out
        self._dirty_now = dirty
        self._replaced: set[Chain] = set()
        self._seen: set[int] = set()
        self._done: set[int] = set()
        self._pending: list[tuple[Chain, Any]] = []
        self._todo = todo
        for node in sorted(todo.values(), key=lambda n: len(n.chain)):
            if id(node) in self._done or any(node.chain[:cut] in self._replaced
                                             for cut in range(len(node.chain))):
                continue
            self._kept(node, out)
        out.roots += [(c, v) for c, v in self._pending if id(v) not in self._seen]
        return out

    # ---- a kept object whose containers changed ------------------------------------------------

    def _changed_pieces(self, node: Node) -> list[str]:
        """The pieces of ``node`` whose value, key or presence changed, and the looked ones."""
        pieces: list[str] = []
        for i in range(node.first, node.first + node.count):
            if i not in self._dirty_now:
                continue  # swept unchanged
            live, keys, values = self.live[i], self.keys[i], self.values[i]
            if keys is None:  # a list
                n = max(len(live), len(values))
                pieces += [f"[{j}]" for j in range(n)
                           if j >= len(live) or j >= len(values) or live[j] is not values[j]]
                continue
            if tuple(live) == keys:
                now = tuple(live.values())
                idx = compress(range(len(now)), map(_not, map(_is, now, values)))
                pieces += [p for j in idx if (p := _piece(node.kind, keys[j], j))]
                continue
            old = dict(zip(keys, values))
            pieces += [p for j, k in enumerate(keys)
                       if live.get(k, MISSING) is not old[k] and (p := _piece(node.kind, k, j))]
            pieces += [p for j, k in enumerate(live)
                       if k not in old and (p := _piece(node.kind, k, j))]
        looked = [p for p, was in zip(node.looked, node.expected)
                  if lookup(node.obj, p) is not was]
        return list(dict.fromkeys([*pieces, *looked]))

    def _kept(self, node: Node, out: Survey) -> None:
        self._done.add(id(node))
        obj = node.obj
        for piece in self._changed_pieces(node):
            value, store = _place(obj, node.kind, piece)
            self._at(node, obj, piece, value, store, out)

    def _off_chain(self, value: Any) -> bool:
        """Whether a value off the chains cannot bring a new tensor: no tensor can be in it, or
        it is an object the watch keeps (its own containers are swept)."""
        return leaf_kind(value) in NO_TENSORS or id(value) in self._node_ids

    def _at(self, node: Node, holder: Any, piece: str, value: Any, store: Store,
            out: Survey) -> None:
        """``holder`` (the live object at ``node``'s chain) holds ``value`` under ``piece``."""
        edge = node.edges.get(piece)
        if edge is None:  # not on a chain: may bring new tensors
            template = node.harmless.get(piece)
            if template is None or not harmless(template, value):
                self._loose(node.chain + (piece,), holder, piece, value, store, out)
            return
        if edge.slot is not None:
            if isinstance(value, torch.Tensor):
                out.places.append(Place(edge.slot, value, holder, piece, store))
            else:
                out.gone.append(edge.slot)
        child = edge.node
        if child is not None and value is not child.obj:
            self._rebuilt(child, value, out)
        elif child is not None and id(child) in self._todo and id(child) not in self._done:
            self._kept(child, out)

    def _loose(self, chain_: Chain, holder: Any, piece: str, value: Any, store: Store,
               out: Survey) -> None:
        if value is MISSING or self._off_chain(value):
            return
        if isinstance(value, torch.Tensor):
            out.loose.append(Place(chain_, value, holder, piece, store))
            if value.__dict__:
                self._pending.append((chain_, value))
        else:
            self._pending.append((chain_, value))

    # ---- an object on a chain the engine rebuilt -----------------------------------------------

    def _rebuilt(self, node: Node, obj: Any, out: Survey) -> None:
        self._replaced.add(node.chain)
        if obj is MISSING or leaf_kind(obj) in NO_TENSORS:
            out.gone += [self.finals[f] for f in self.below[node.chain]]
            return
        template = node.template
        if template is not None and type(obj) is type(node.obj) and self._by_template(
                node, template, obj, out):
            return
        if not self._matches(node, obj):
            self._resolve(node, obj, out)
            return
        self._seen.add(id(obj))
        if node.kind is Kind.TUPLE:
            for j, value in enumerate(obj):
                piece = f"[{j}]"
                if piece in node.edges or value is not node.obj[j]:
                    self._at(node, obj, piece, value, None, out)
            return
        edges, off_chain, at = node.edges, self._off_chain, self._at
        for i, c in enumerate(_containers(obj, node.kind)):
            keys = self.keys[node.first + i]
            if keys is None:
                for j, value in enumerate(c):
                    piece = f"[{j}]"
                    if piece in edges or not off_chain(value):
                        at(node, obj, piece, value, (c, j), out)
                continue
            for piece, k, value in zip(node.pieces[i], keys, c.values()):
                if piece is not None and (piece in edges or not off_chain(value)):
                    at(node, obj, piece, value, (c, k), out)
        for piece in node.looked:
            value, store = _place(obj, node.kind, piece)
            self._at(node, obj, piece, value, store, out)

    def _by_template(self, node: Node, template: Template, obj: Any, out: Survey) -> bool:
        """The fast check of a rebuilt plain object of the snapshot object's class: False (nothing
        done) when its keys or the classes of its atom values differ from the template's."""
        d = obj.__dict__
        if tuple(d) != template.keys:
            return False
        values = tuple(d.values())
        if tuple(map(type, map(values.__getitem__, template.atoms))) != template.atom_types:
            return False
        self._seen.add(id(obj))
        at = self._at
        for j, piece, was, bare in template.edges:
            value = values[j]
            if bare is None:
                at(node, obj, piece, value, (d, template.keys[j]), out)
            elif value is not was:  # else a bare slot still holding its startup tensor
                if isinstance(value, torch.Tensor):
                    out.places.append(Place(bare, value, obj, piece, (d, template.keys[j])))
                else:
                    out.gone.append(bare)
        off_chain = self._off_chain
        for j, piece, key in template.others:
            if not off_chain(values[j]):
                at(node, obj, piece, values[j], (d, key), out)
        for piece in node.looked:
            value, store = _place(obj, node.kind, piece)
            at(node, obj, piece, value, store, out)
        return True

    def _matches(self, node: Node, obj: Any) -> bool:
        """``obj`` has the snapshot object's class and keys (a template descent is exact)."""
        if type(obj) is not type(node.obj) or node.kind in (Kind.MODULE, Kind.OPAQUE):
            return False
        if node.kind is Kind.TUPLE:
            return len(obj) == len(node.obj)
        for i, c in enumerate(_containers(obj, node.kind)):
            keys = self.keys[node.first + i]
            if (len(c) != len(self.values[node.first + i])) if keys is None \
                    else tuple(c) != keys:
                return False
        return True

    def _resolve(self, node: Node, obj: Any, out: Survey) -> None:
        """No template: follow each guarded chain under ``node`` and walk ``obj`` whole."""
        memo: dict[Chain, Any] = {node.chain: obj}

        def at(c: Chain) -> Any:
            if c not in memo:
                parent = at(c[:-1])
                memo[c] = MISSING if parent is MISSING else lookup(parent, c[-1])
            return memo[c]

        for final in self.below[node.chain]:
            value = at(final)
            if isinstance(value, torch.Tensor):
                out.places.append(Place(self.finals[final], value, at(final[:-1]), final[-1]))
            else:
                out.gone.append(self.finals[final])
        self._seen.add(id(obj))
        out.roots.append((node.chain, obj))
