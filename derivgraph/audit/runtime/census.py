"""A census of every tensor (and Python float) reachable from a model.

The walk goes in two passes, so that every path is the one a reader expects:

1. the registered module tree: submodules, parameters and buffers (``named_modules`` order);
2. breadth first from every module through everything else an object holds: plain
   attributes of modules and of nested non-module objects (quant methods, kernels, experts
   objects, quant-config dataclasses and their frozen descriptors, attention impls,
   ``__slots__`` objects), lists, tuples and dicts, ``functools.partial`` args and keywords,
   bound methods, closure cells and default arguments of functions, attributes attached to
   tensors (vLLM's ``weight_loader``) and the inner tensors of wrapper subclasses.

Every object is walked once; the first path found (fewest hops from a module) is its
canonical path and later paths are kept as aliases, so a tensor held in three places is one
entry with two aliases. Back-references (``quant_method.layer`` pointing at its own module)
are dropped rather than reported as aliases. Depth (attribute hops from a module) and object
count are bounded; what the bounds cut is counted on the :class:`Census`.

Path pieces: ``.name`` (attributes, submodules, parameters; ``layers.3``), ``[0]`` (list or
tuple items), ``['key']`` (dict items), ``.partial.func``, ``.partial.args[0]``,
``.partial.keywords['k']``, ``.__func__``, ``.__self__``, ``.closure.name`` (a closure cell),
``.defaults[0]`` and ``.kwdefaults['k']`` (function defaults).

Not walked: module hooks (keyed by global counters, so their paths would differ between two
models), sets (no stable order), weak references, Python modules, classes (and so class
attributes), generators, loggers and functions' globals. Each tensor keeps at most
``max_aliases`` alias paths, chosen in walk order, so two censuses of alike models agree.

A census keeps the tensors it saw alive (``entry.value``) unless asked not to: while it lives,
no object id or address it recorded can be recycled, so a comparison can trust both.

:func:`reach` is the same walk without identities, digests or entries (every tensor with its
paths, and the floats): what strict mode's reload check needs, at a fraction of the cost. How
an object of a class is entered (its dataclass fields, slots, container kind) is decided once
per class and cached; the values are read from each object on every walk, so a changed
structure is always seen.
"""

from __future__ import annotations

import dataclasses
import enum
import functools
import gc
import logging
import time
import types
import weakref
from collections import deque
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import torch
from torch import nn

from derivgraph.audit.runtime.fingerprint import Digests, fingerprint, has_storage

__all__ = ["Census", "CensusEntry", "Reach", "TensorIdentity", "fingerprint", "gc_paused",
           "reach", "take_census"]

logger = logging.getLogger(__name__)

#: nn.Module bookkeeping that holds no model state (hooks are keyed by global counters).
_MODULE_INTERNALS = frozenset({
    "_parameters", "_buffers", "_modules", "_non_persistent_buffers_set", "training",
    "_backward_pre_hooks", "_backward_hooks", "_is_full_backward_hook", "_forward_hooks",
    "_forward_hooks_with_kwargs", "_forward_hooks_always_called", "_forward_pre_hooks",
    "_forward_pre_hooks_with_kwargs", "_state_dict_hooks", "_state_dict_pre_hooks",
    "_load_state_dict_pre_hooks", "_load_state_dict_post_hooks", "_compiled_call_impl",
})
_ATOMS = (str, bytes, bytearray, int, bool, complex, type(None), enum.Enum, torch.dtype,
          torch.device, torch.Size, torch.layout, torch.memory_format, range, slice)
_OPAQUE = (types.ModuleType, type, types.BuiltinFunctionType, types.MethodWrapperType,
           types.WrapperDescriptorType, types.MethodDescriptorType, types.CodeType,
           types.FrameType, types.GeneratorType, types.CoroutineType, weakref.ReferenceType,
           torch.Generator, torch.Stream, torch.Event, logging.Logger, set, frozenset)
#: Dict keys rendered with repr: stable across processes and runs.
_KEY_ATOMS = (str, int, float, bool, type(None), enum.Enum, torch.dtype, torch.device)


@dataclass(frozen=True)
class TensorIdentity:
    """Where a tensor lives: what a captured graph bakes in.

    ``obj_id`` is the Python object; ``data_ptr`` the first element's address (0 on ``meta``
    and for tensors without storage); ``storage_ptr``/``storage_nbytes`` the whole
    allocation, so two tensors sharing one storage (``.set_()``, views) can be told apart
    from two that merely sit next to each other.
    """

    obj_id: int
    data_ptr: int
    storage_offset: int
    shape: tuple[int, ...]
    stride: tuple[int, ...]
    dtype: str
    device: str
    storage_ptr: int = 0
    storage_nbytes: int = 0

    @classmethod
    def of(cls, t: torch.Tensor) -> TensorIdentity:
        """The identity of ``t`` now."""
        data_ptr = storage_ptr = nbytes = offset = 0
        stride: tuple[int, ...] = ()
        if not t.is_sparse and t.layout == torch.strided:
            stride = tuple(t.stride())
            offset = t.storage_offset()
            if t.device.type != "meta" and has_storage(t):
                storage = t.untyped_storage()
                data_ptr, storage_ptr, nbytes = t.data_ptr(), storage.data_ptr(), storage.nbytes()
        return cls(id(t), data_ptr, offset, tuple(t.shape), stride,
                   str(t.dtype).removeprefix("torch."), str(t.device), storage_ptr, nbytes)

    def same_place(self, other: TensorIdentity) -> bool:
        """Same object at the same address with the same layout."""
        return self == other

    def same_address(self, other: TensorIdentity) -> bool:
        """Same address and layout, whatever the object."""
        return self.address() == other.address()

    def address(self) -> tuple[Any, ...]:
        """Everything but the object id: what a kernel reading this tensor depends on."""
        return (self.data_ptr, self.storage_offset, self.shape, self.stride, self.dtype,
                self.device)

    def describe(self) -> str:
        """A short readable form: ``float32[4, 8] cpu @0x7f..+0``."""
        shape = ", ".join(map(str, self.shape))
        return f"{self.dtype}[{shape}] {self.device} @{self.data_ptr:#x}+{self.storage_offset}"


@dataclass
class CensusEntry:
    """One reachable tensor or Python scalar, at its canonical path.

    ``kind`` is parameter | buffer | attribute | scalar; ``place`` says where it hides
    (parameter, buffer, attribute, item, partial, closure, default, tensor-attribute);
    ``holder`` is the class name of the object holding it.
    """

    path: str
    kind: str
    identity: TensorIdentity | None
    fingerprint: Any
    value: Any = None  # the tensor itself (kept alive so ids stay unique) or the number
    aliases: list[str] = field(default_factory=list)
    place: str = "attribute"
    holder: str = ""

    @property
    def is_tensor(self) -> bool:
        return self.identity is not None

    def paths(self) -> list[str]:
        """The canonical path followed by every alias."""
        return [self.path, *self.aliases]


@dataclass
class Census:
    """Canonical path -> entry for every tensor and scalar reachable from a model.

    ``objects`` counts the objects walked; ``truncated`` is set when ``max_objects`` stopped
    the walk; ``depth_limited`` counts objects not entered because of ``max_depth``.
    """

    entries: dict[str, CensusEntry] = field(default_factory=dict)
    truncated: bool = False
    depth_limited: int = 0
    objects: int = 0
    seconds: float = 0.0
    _index: dict[str, CensusEntry] | None = field(default=None, repr=False, compare=False)

    def __len__(self) -> int:
        return len(self.entries)

    def tensors(self) -> dict[str, CensusEntry]:
        """Canonical path -> entry, tensors only."""
        return {p: e for p, e in self.entries.items() if e.identity is not None}

    def scalars(self) -> dict[str, CensusEntry]:
        """Canonical path -> entry, Python scalars only."""
        return {p: e for p, e in self.entries.items() if e.identity is None}

    def all_paths(self) -> dict[str, str]:
        """Every path (aliases too) -> the canonical path of its entry."""
        return {p: e.path for p, e in self.index().items()}

    def index(self) -> dict[str, CensusEntry]:
        """Every path (aliases too) -> its entry."""
        if self._index is None:
            index: dict[str, CensusEntry] = {}
            for e in self.entries.values():
                for p in e.paths():
                    index.setdefault(p, e)
            self._index = index
        return self._index

    def get(self, path: str) -> CensusEntry | None:
        """The entry at ``path`` (canonical or alias), or ``None``."""
        return self.index().get(path)

    def nbytes(self) -> int:
        """Bytes of all tensors with storage (each storage counted once)."""
        seen: dict[int, int] = {}
        for e in self.entries.values():
            ident = e.identity
            if ident is not None and ident.storage_ptr:
                seen[ident.storage_ptr] = max(seen.get(ident.storage_ptr, 0), ident.storage_nbytes)
        return sum(seen.values())


@contextmanager
def gc_paused() -> Iterator[None]:
    """Pause the cyclic garbage collector: a walk allocates tens of thousands of short-lived
    objects, and each full collection it would trigger traverses the whole heap (a loaded
    engine's is large). Nothing a walk allocates needs it; it resumes, if it was on, after."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


# ---- the walk ---------------------------------------------------------------------------------

def _registered(module: nn.Module) -> Iterator[tuple[str, Any, str]]:
    for name, p in module._parameters.items():
        if p is not None:
            yield "." + name, p, "parameter"
    for name, b in module._buffers.items():
        if b is not None:
            yield "." + name, b, "buffer"
    for name, m in module._modules.items():
        if m is not None:
            yield "." + name, m, "module"


def _key_piece(key: Any, index: int) -> str | None:
    if isinstance(key, _KEY_ATOMS):
        return f"[{key!r}]"
    if isinstance(key, tuple) and all(isinstance(k, _KEY_ATOMS) for k in key):
        return f"[{key!r}]"
    if isinstance(key, torch.Tensor):
        return None  # a tensor used as a key is not state a kernel reads through the dict
    return f"[<{type(key).__name__} #{index}>]"


class _Shape(enum.Enum):
    """How the walk enters an object of a class (decided once per class, see ``_shape``)."""

    MODULE = enum.auto()
    TENSOR = enum.auto()
    PARTIAL = enum.auto()
    METHOD = enum.auto()
    FUNCTION = enum.auto()
    MAPPING = enum.auto()
    SEQUENCE = enum.auto()
    OBJECT = enum.auto()


class _Leaf(enum.Enum):
    """What a reached value is to the walk (decided once per class, see ``_leaf``)."""

    TENSOR = enum.auto()
    FLOAT = enum.auto()
    INT = enum.auto()
    ATOM = enum.auto()  # an atom or an opaque object: not walked, not recorded
    OBJECT = enum.auto()


@dataclass(frozen=True)
class _Plan:
    """The per-class attribute plan: how to enter it, and its dataclass fields and slots."""

    shape: _Shape
    fields: tuple[str, ...] = ()
    slots: tuple[str, ...] = ()


#: Per-class caches (a class's answers never change; capped so dynamic classes cannot pile up).
_PLANS: dict[type, _Plan] = {}
_LEAVES: dict[type, _Leaf] = {}
_CACHE_CAP = 65_536


def _plan_of(obj: Any) -> _Plan:
    if isinstance(obj, nn.Module):
        return _Plan(_Shape.MODULE)
    if isinstance(obj, torch.Tensor):
        return _Plan(_Shape.TENSOR)
    if isinstance(obj, functools.partial):
        return _Plan(_Shape.PARTIAL)
    if isinstance(obj, types.MethodType):
        return _Plan(_Shape.METHOD)
    if isinstance(obj, types.FunctionType):
        return _Plan(_Shape.FUNCTION)
    if isinstance(obj, Mapping):
        return _Plan(_Shape.MAPPING)
    if isinstance(obj, (list, tuple, deque)):
        return _Plan(_Shape.SEQUENCE)
    fields = tuple(f.name for f in dataclasses.fields(obj)) if dataclasses.is_dataclass(obj) \
        else ()
    slots = tuple(dict.fromkeys(
        name for klass in type(obj).__mro__ for name in getattr(klass, "__slots__", ())
        if not name.startswith("__")))
    return _Plan(_Shape.OBJECT, fields, slots)


def _remember(cache: dict[type, Any], obj: Any, make: Callable[[Any], Any]) -> Any:
    """``make(obj)`` stored for ``type(obj)`` (the slow path of the per-class caches; bounded)."""
    if len(cache) >= _CACHE_CAP:
        cache.clear()
    value = cache[type(obj)] = make(obj)
    return value


def _shape(obj: Any) -> _Plan:
    return _PLANS.get(type(obj)) or _remember(_PLANS, obj, _plan_of)


def _leaf_of(child: Any) -> _Leaf:
    if isinstance(child, torch.Tensor):
        return _Leaf.TENSOR
    if isinstance(child, float):
        return _Leaf.FLOAT
    if isinstance(child, int) and not isinstance(child, (bool, enum.Enum)):
        return _Leaf.INT
    if isinstance(child, _ATOMS) or isinstance(child, _OPAQUE):
        return _Leaf.ATOM
    return _Leaf.OBJECT


def _leaf(child: Any) -> _Leaf:
    return _LEAVES.get(type(child)) or _remember(_LEAVES, child, _leaf_of)


def _attributes(obj: Any) -> Iterator[tuple[str, Any, str]]:
    """Everything but the registered module tree."""
    plan = _shape(obj)
    shape = plan.shape
    if shape is _Shape.MODULE:
        for name, v in obj.__dict__.items():
            if name not in _MODULE_INTERNALS:
                yield "." + name, v, "attribute"
        return
    if shape is _Shape.TENSOR:
        inner = getattr(type(obj), "__tensor_flatten__", None)
        names: set[str] = set()
        if inner is not None and type(obj) not in (torch.Tensor, nn.Parameter):
            try:
                names = set(obj.__tensor_flatten__()[0])
            except (RuntimeError, TypeError, NotImplementedError) as exc:
                logger.debug("census: cannot flatten %s: %s", type(obj).__name__, exc)
        for name in sorted(names):
            yield "." + name, getattr(obj, name, None), "inner"
        for name, v in obj.__dict__.items():
            if name not in names:
                yield "." + name, v, "tensor-attribute"
        return
    if shape is _Shape.PARTIAL:
        yield ".partial.func", obj.func, "partial"
        for i, a in enumerate(obj.args):
            yield f".partial.args[{i}]", a, "partial"
        for k, v in (obj.keywords or {}).items():
            yield f".partial.keywords[{k!r}]", v, "partial"
        return
    if shape is _Shape.METHOD:
        yield ".__func__", obj.__func__, "attribute"
        yield ".__self__", obj.__self__, "attribute"
        return
    if shape is _Shape.FUNCTION:
        for name, cell in zip(obj.__code__.co_freevars, obj.__closure__ or ()):
            try:
                yield f".closure.{name}", cell.cell_contents, "closure"
            except ValueError:  # an empty cell holds nothing to record
                continue
        for i, v in enumerate(obj.__defaults__ or ()):
            yield f".defaults[{i}]", v, "default"
        for k, v in (obj.__kwdefaults__ or {}).items():
            yield f".kwdefaults[{k!r}]", v, "default"
        return
    if shape is _Shape.MAPPING:
        for i, (k, v) in enumerate(list(obj.items())):
            piece = _key_piece(k, i)
            if piece is not None:
                yield piece, v, "item"
        return
    if shape is _Shape.SEQUENCE:
        for i, v in enumerate(obj):
            yield f"[{i}]", v, "item"
        return
    for name in plan.fields:
        yield "." + name, getattr(obj, name, None), "attribute"
    state = getattr(obj, "__dict__", None) or {}
    fields = plan.fields
    for name, v in state.items():
        if name not in fields:
            yield "." + name, v, "attribute"
    for name in plan.slots:
        if name not in fields and name not in state:
            yield "." + name, getattr(obj, name, None), "attribute"


def _join(path: str, piece: str) -> str:
    if not path:
        return piece[1:] if piece.startswith(".") else piece
    return path + piece


@dataclass
class _Node:
    path: str
    parent: int  # id of the tree parent, 0 for the root
    depth: int
    extra: list[tuple[int, str]] = field(default_factory=list)  # alias edges (parent id, piece)


class _Walker:
    """The walk itself; what a reached tensor or scalar becomes is :meth:`record_tensor` /
    :meth:`record_scalar` (a :class:`Census` entry here, a bare path list in
    :class:`_ReachWalker`)."""

    def __init__(self, census: Census, *, max_depth: int, max_objects: int, fingerprints: bool,
                 floats: bool, ints: bool, keep_values: bool, max_aliases: int):
        self.census = census
        self.max_depth, self.max_objects = max_depth, max_objects
        self.fingerprints, self.floats, self.ints = fingerprints, floats, ints
        self.keep_values, self.max_aliases = keep_values, max_aliases
        self.nodes: dict[int, _Node] = {}
        self.objs: dict[int, Any] = {}  # keeps walked objects alive: ids stay unique
        self.tensor_entries: dict[int, CensusEntry] = {}
        self.queue: deque[tuple[int, Any]] = deque()
        self.digests = Digests()
        self.aliased: dict[int, bool] = {}

    def _is_ancestor(self, maybe: int, of: int) -> bool:
        node_id = of
        while node_id:
            if node_id == maybe:
                return True
            node_id = self.nodes[node_id].parent
        return False

    def record_tensor(self, cid: int, path: str, t: torch.Tensor, kind: str,
                      holder: Any) -> None:
        entry_kind = kind if kind in ("parameter", "buffer") else "attribute"
        entry = CensusEntry(path, entry_kind, TensorIdentity.of(t), None,
                            t if self.keep_values else None, place=kind,
                            holder=type(holder).__name__)
        if self.fingerprints:  # device digests synchronize once, at the end
            self.digests.add(entry, t)
        self.tensor_entries[cid] = entry
        self.census.entries[path] = entry

    def record_scalar(self, path: str, value: float | int, kind: str, holder: Any) -> None:
        if path not in self.census.entries:
            self.census.entries[path] = CensusEntry(path, "scalar", None, value, value,
                                                    place=kind, holder=type(holder).__name__)

    def _discover(self, parent: int, piece: str, child: Any, kind: str, holder: Any,
                  depth: int) -> None:
        cid = id(child)
        known = self.nodes.get(cid)
        if known is not None:
            if not self._is_ancestor(cid, parent):
                known.extra.append((parent, piece))
            return
        leaf = _leaf(child)
        if leaf is _Leaf.ATOM:
            return
        path = _join(self.nodes[parent].path if parent else "", piece)
        if leaf is _Leaf.TENSOR:
            self.nodes[cid] = _Node(path, parent, depth)
            self.objs[cid] = child
            self.record_tensor(cid, path, child, kind, holder)
            if child.__dict__ or (type(child) not in (torch.Tensor, nn.Parameter)
                                  and hasattr(child, "__tensor_flatten__")):
                self._enqueue(cid, child, depth)
            return
        if leaf is _Leaf.FLOAT:
            if self.floats:
                self.record_scalar(path, child, kind, holder)
            return
        if leaf is _Leaf.INT:
            if self.ints:
                self.record_scalar(path, child, kind, holder)
            return
        self.nodes[cid] = _Node(path, parent, depth)
        self.objs[cid] = child
        self._enqueue(cid, child, depth)

    def _enqueue(self, cid: int, obj: Any, depth: int) -> None:
        if depth >= self.max_depth:
            self.census.depth_limited += 1
            return
        self.queue.append((cid, obj))

    def walk(self, model: Any) -> None:
        root = id(model)
        self.nodes[root] = _Node("", 0, 0)
        self.objs[root] = model
        modules: list[tuple[int, Any]] = [(root, model)]
        if isinstance(model, nn.Module):  # pass 1: the registered tree, breadth first
            i = 0
            while i < len(modules):
                mid, module = modules[i]
                i += 1
                for piece, child, kind in _registered(module):
                    if kind == "module":
                        if id(child) not in self.nodes:
                            self.nodes[id(child)] = _Node(_join(self.nodes[mid].path, piece),
                                                          mid, 0)
                            self.objs[id(child)] = child
                            modules.append((id(child), child))
                        elif not self._is_ancestor(id(child), mid):
                            self.nodes[id(child)].extra.append((mid, piece))
                    else:
                        self._discover(mid, piece, child, kind, module, 0)
        tree = {mid for mid, _ in modules}
        self.queue.extend(modules)  # pass 2: everything else, breadth first from every module
        while self.queue:
            oid, obj = self.queue.popleft()
            self.census.objects += 1
            if self.census.objects > self.max_objects:
                self.census.truncated = True
                logger.warning("census stopped after %d objects (max_objects); raise it to see "
                               "everything", self.max_objects)
                break
            depth = self.nodes[oid].depth
            children = _registered(obj) if (isinstance(obj, nn.Module)
                                            and oid not in tree) else ()
            for piece, child, kind in (*children, *_attributes(obj)):
                self._discover(oid, piece, child, kind, obj, depth + 1)

    def paths_of(self, cid: int, memo: dict[int, list[str]], active: set[int]) -> list[str]:
        """Canonical path then alias paths of an object, at most ``max_aliases + 1``."""
        if cid in memo:
            return memo[cid]
        node = self.nodes[cid]
        if not self._aliased(cid):
            memo[cid] = [node.path]
            return memo[cid]
        out = [node.path]
        chain = cid
        parents = []
        while chain:  # aliases of any tree ancestor are aliases of this object too
            parents.append(chain)
            chain = self.nodes[chain].parent
        active.add(cid)
        for anc in parents:
            anc_node = self.nodes[anc]
            if not anc_node.extra:
                continue
            suffix = node.path[len(anc_node.path):] if anc != cid else ""
            for parent, piece in anc_node.extra:
                if parent in active or len(out) > self.max_aliases:
                    continue
                for p in self.paths_of(parent, memo, active):
                    alias = _join(p, piece) + suffix
                    if alias not in out:
                        out.append(alias)
                    if len(out) > self.max_aliases:
                        break
        active.discard(cid)
        memo[cid] = out
        return out

    def _aliased(self, cid: int) -> bool:
        """Whether the object or any tree ancestor has an alias edge (memoized)."""
        known = self.aliased.get(cid)
        if known is None:
            node = self.nodes[cid]
            known = bool(node.extra) or (node.parent != 0 and self._aliased(node.parent))
            self.aliased[cid] = known
        return known

    def finish(self) -> None:
        self.digests.finish()
        memo: dict[int, list[str]] = {}
        for cid, entry in self.tensor_entries.items():
            entry.aliases = self.paths_of(cid, memo, set())[1:]


def take_census(model: Any, *, max_depth: int = 12, max_objects: int = 500_000,
                fingerprints: bool = True, floats: bool = True, ints: bool = False,
                keep_values: bool = True, max_aliases: int = 16) -> Census:
    """Walk everything reachable from ``model`` (see the module docstring); reads only.

    ``max_depth``: attribute hops from the nearest module. ``fingerprints``: hash every
    tensor's bytes (the cost of a census is mostly this). ``floats``/``ints``: record Python
    scalars (ints are off by default: sizes and counts, rarely weight-derived).
    ``keep_values=False`` drops the references to tensors (for a reference census whose
    objects need not stay alive). ``max_aliases``: alias paths kept per tensor.
    """
    start = time.perf_counter()
    census = Census()
    walker = _Walker(census, max_depth=max_depth, max_objects=max_objects,
                     fingerprints=fingerprints, floats=floats, ints=ints,
                     keep_values=keep_values, max_aliases=max_aliases)
    with torch.no_grad(), gc_paused():
        walker.walk(model)
        walker.finish()
    census.entries = dict(sorted(census.entries.items()))
    census.seconds = time.perf_counter() - start
    return census


@dataclass
class Reach:
    """What :func:`reach` finds: each tensor with its paths (canonical first), Python floats.

    ``objects`` and ``truncated`` as on :class:`Census`. Holds the tensors it found.
    """

    tensors: list[tuple[torch.Tensor, list[str]]] = field(default_factory=list)
    floats: dict[str, float] = field(default_factory=dict)
    objects: int = 0
    truncated: bool = False


class _ReachWalker(_Walker):
    def __init__(self, census: Census, reach: Reach, **bounds: int) -> None:
        super().__init__(census, fingerprints=False, floats=True, ints=False, keep_values=True,
                         **bounds)
        self.reach = reach
        self.found: dict[int, torch.Tensor] = {}

    def record_tensor(self, cid: int, path: str, t: torch.Tensor, kind: str,
                      holder: Any) -> None:
        self.found[cid] = t

    def record_scalar(self, path: str, value: float | int, kind: str, holder: Any) -> None:
        self.reach.floats.setdefault(path, float(value))

    def finish(self) -> None:
        memo: dict[int, list[str]] = {}
        self.reach.tensors = [(t, self.paths_of(cid, memo, set()))
                              for cid, t in self.found.items()]


def reach(model: Any, *, max_depth: int = 12, max_objects: int = 500_000,
          max_aliases: int = 16) -> Reach:
    """The walk of :func:`take_census` without identities, digests or entries; reads only.

    Every tensor with the same canonical and alias paths a census gives, and every Python
    float: what an address check needs, at about half a census's cost.
    """
    found = Reach()
    census = Census()
    walker = _ReachWalker(census, found, max_depth=max_depth, max_objects=max_objects,
                          max_aliases=max_aliases)
    with torch.no_grad(), gc_paused():
        walker.walk(model)
        walker.finish()
    found.objects, found.truncated = census.objects, census.truncated
    return found
