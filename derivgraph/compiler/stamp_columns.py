"""Column proofs: a template's facts checked over every later layer of its kind at once.

:func:`~derivgraph.compiler.stamp.facts_hold` checks a template's recorded facts on one layer.
When the facts are *model facts* (the tensor at a path, its layout, whether a path is a
derived tensor while no derived tensor is added), they do not change while the graph is built,
so they may be checked for every later layer of the template's kind at the moment the template
is kept, and the answer is the one :func:`facts_hold` would give each layer when its turn came.
:func:`prove_rows` checks them fact by fact as C-level sweeps over the rows (a column per
fact): each :class:`Check` in the order :func:`facts_hold` runs it, each over the rows that
still hold. A row is *proven* when every fact holds by the sweeps; any other row (a fact
differs, or a sweep's shortcut does not apply) is not proven, and takes the per-layer path
(:func:`facts_hold`, then today's resolution), with its errors.
"""

from __future__ import annotations

from bisect import bisect_right
from collections import deque
from collections.abc import Callable, Sequence
from itertools import compress, repeat
from operator import add, attrgetter, contains, eq, getitem, is_, is_not
from typing import Any

import torch
from torch import nn

from derivgraph.column_layout import tensor_method
from derivgraph.compiler.bind import BoundSpec, modules_of, paths_of, specs_of
from derivgraph.compiler.graph import DerivedGraph
from derivgraph.compiler.reads import Probe, Reads, probe_derived, probe_each, probe_path
from derivgraph.paths import MODULE_REGISTRIES

__all__ = ["Check", "ColumnProof", "HopSweeps", "Stacks", "checks_of", "column_provable",
           "prove_columns", "prove_rows", "rows_hold"]

#: the probes whose fact is a model fact (a column proof may run them ahead of the layer's turn)
_STATIC = frozenset({probe_path, probe_each})

_shape, _dtype, _device = attrgetter("shape"), attrgetter("dtype"), attrgetter("device")
_STRIDE = torch.Tensor.stride

try:  # torch's C++ check of a tensor's properties (TorchDynamo's guards): _all_layout's
    from torch._C._dynamo.guards import TensorGuards as _TensorGuards
except ImportError:  # a build without it: the layout sweeps alone
    _TensorGuards = None
#: the fewest tensors :func:`_all_layout` tries its guard on (below: the sweeps alone)
_GUARD_MIN = 64
_vars = attrgetter("__dict__")


class Check:
    """One recorded probe and its fact, as :func:`~derivgraph.compiler.stamp.facts_hold`
    checks it on another layer: ``part`` set for a path probe that found a tensor at its first
    hop (on a module of class ``cls``: the template's), ``rel`` for a derived-path probe of a
    path (``suffix``: what follows a module path), else the probe is run."""

    __slots__ = ("args", "cls", "fact", "layout", "part", "probe", "rel", "suffix")

    def __init__(self, probe: Probe, args: tuple[Any, ...], fact: Any, cls: type):
        self.probe, self.args, self.fact, self.cls = probe, args, fact, cls
        self.part: str | None = None
        self.rel: str | None = None
        self.suffix = ""
        self.layout: tuple[Any, ...] = ()
        # a tensor at the first hop (the walk stops there), a hop get_path reads as one (an
        # identifier, no dunder: stricter than its rule)
        if probe is probe_path and issubclass(cls, nn.Module) and args[0] \
                and args[0][0].isidentifier() and not args[0][0].startswith("__") \
                and type(fact) is tuple and fact[:2] == ("tensor", 1):
            self.part, self.layout = args[0][0], fact[2]
        elif probe is probe_derived and type(fact) is bool and args[0]:
            self.rel, self.suffix = args[0], "." + args[0]  # join's "module_path.rel"


class Stacks:
    """The rows of a list of bound specs grouped by (spec, module class), found at the first
    :meth:`later` (a template's kind is one of these groups, or a part of one)."""

    def __init__(self, bounds: Sequence[BoundSpec]):
        self.bounds = bounds
        self._groups: dict[tuple[int, type], list[int]] | None = None

    def later(self, at: int) -> list[int]:
        """The rows after row ``at`` of its spec and class, in order, with a module path."""
        groups = self._groups
        if groups is None:
            groups = self._groups = _groups(self.bounds)
        bounds = self.bounds
        rows = groups[(id(specs_of(bounds)[at]), type(modules_of(bounds)[at]))]
        after = rows[bisect_right(rows, at):]
        return list(compress(after, map(paths_of(bounds).__getitem__, after)))


def _groups(bounds: Sequence[BoundSpec]) -> dict[tuple[int, type], list[int]]:
    """The rows of ``bounds`` by (spec, module class), in order (one group, where every
    row has the first row's very spec and class, by two C-level identity sweeps of the
    columns)."""
    specs, modules = specs_of(bounds), modules_of(bounds)
    if specs:
        spec, cls = specs[0], type(modules[0])
        if all(map(is_, specs, repeat(spec))) \
                and all(map(is_, map(type, modules), repeat(cls))):
            return {(id(spec), cls): list(range(len(specs)))}
    keys = list(zip(map(id, specs), map(type, modules)))
    groups: dict[tuple[int, type], list[int]] = {}
    for i, key in enumerate(keys):
        groups.setdefault(key, []).append(i)
    return groups


def checks_of(reads: Reads, cls: type) -> list[Check]:
    """``reads``' facts compiled into checks once (``cls``: the class of the first module
    they are checked on)."""
    checks = reads.checks
    if checks is None:
        checks = reads.checks = [Check(probe, args, fact, cls)
                                 for (probe, args), fact in reads.facts.items()]
    return checks


def column_provable(reads: Reads, derived_fixed: bool) -> bool:
    """Whether every fact of ``reads`` is a model fact: a path or ``each()`` probe, or a
    derived-path probe when ``derived_fixed`` (no derived tensor is added while the rows
    are resolved)."""
    return all(probe in _STATIC or (derived_fixed and probe is probe_derived)
               for probe, _ in reads.facts)


def prove_rows(graph: DerivedGraph, reads: Reads, bounds: Sequence[BoundSpec],
               params: Sequence[dict[str, Any]],
               sweeps: HopSweeps | None = None) -> list[dict[tuple[str, ...], Any] | None]:
    """Per row of ``bounds`` (``params``: each row's): the objects the path probes found when
    every fact of ``reads`` holds there, proven by sweeps; None when the row is not proven
    (it must be checked by :func:`~derivgraph.compiler.stamp.facts_hold`). ``reads`` must be
    :func:`column_provable`, each row a module of one class with a module path."""
    proof = prove_columns(graph, reads, bounds, params, sweeps)
    proven: list[dict[tuple[str, ...], Any] | None] = [None] * len(bounds)
    for k, i in enumerate(proof.rows):
        proven[i] = proof.objects(k)
    return proven


class ColumnProof:
    """What :func:`prove_columns` proved: the ``rows`` (positions among the bounds) every
    fact holds on, and per path probe (``keys``: its parts) its object on each of them
    (``found``), a column each; :meth:`objects` is one row's as :func:`prove_rows` gives it."""

    __slots__ = ("found", "keys", "rows")

    def __init__(self, rows: list[int], keys: list[tuple[str, ...]], found: list[list[Any]]):
        self.rows, self.keys, self.found = rows, keys, found

    def objects(self, k: int) -> dict[tuple[str, ...], Any]:
        """The objects the path probes found on the ``k``-th proven row."""
        return dict(zip(self.keys, [column[k] for column in self.found], strict=True))

    def columns(self, ks: list[int]) -> dict[tuple[str, ...], list[Any]]:
        """Per path probe's parts, its object on each of the proven rows ``ks``, in order
        (what :meth:`objects` of each gives under that key)."""
        return dict(zip(self.keys, [list(map(column.__getitem__, ks))
                                    for column in self.found], strict=True))


def prove_columns(graph: DerivedGraph, reads: Reads, bounds: Sequence[BoundSpec],
                  params: Sequence[dict[str, Any]],
                  sweeps: HopSweeps | None = None) -> ColumnProof:
    """:func:`prove_rows` as columns (no per-row dict): the rows proven and, per path probe,
    the objects it found on them."""
    return ColumnProof(*_holding(graph, reads, bounds, params, sweeps))


def rows_hold(graph: DerivedGraph, reads: Reads, bounds: Sequence[BoundSpec],
              params: Sequence[dict[str, Any]], sweeps: HopSweeps | None = None) -> list[bool]:
    """Per row: whether :func:`prove_rows` proves it (no objects kept)."""
    proven = [False] * len(bounds)
    deque(map(proven.__setitem__, _holding(graph, reads, bounds, params, sweeps)[0],
              repeat(True)), maxlen=0)  # one C-level sweep
    return proven


def _holding(graph: DerivedGraph, reads: Reads, bounds: Sequence[BoundSpec],
             params: Sequence[dict[str, Any]], sweeps: HopSweeps | None = None,
             ) -> tuple[list[int], list[tuple[str, ...]], list[list[Any]]]:
    """The rows every fact holds on, the path probes' parts, and per path probe the object
    it found on each of those rows."""
    n = len(bounds)
    if not n:
        return [], [], []
    modules = modules_of(bounds)  # read only
    dicts = list(map(_vars, modules))
    checks = checks_of(reads, type(modules[0]))
    alive = list(range(n))  # the rows every fact so far held on
    keys: list[tuple[str, ...]] = []
    found: list[list[Any]] = []  # per path probe, its object per alive row
    for check in checks:
        if not alive:
            break
        got: list[Any] | None
        if check.part is not None:
            got = _first_hop(modules, dicts, alive, check, sweeps)
            holds = list(map(is_not, got, repeat(None)))
        elif check.rel is not None:
            paths = map(add, map(paths_of(bounds).__getitem__, alive), repeat(check.suffix))
            holds = list(map(is_, graph.derived_each(paths), repeat(check.fact)))
            got = None
        else:
            got, holds = [], []
            for i in alive:
                fact, obj = check.probe(graph, bounds[i], params[i], *check.args)
                got.append(obj)
                holds.append(fact == check.fact)
            if check.probe is not probe_path:
                got = None
        if got is not None:
            keys.append(check.args[0])
            found.append(got)
        alive, found = _keep(alive, found, holds)
    return alive, keys, found


def _keep(alive: list[int], found: list[list[Any]],
          holds: list[bool]) -> tuple[list[int], list[list[Any]]]:
    """The rows (and their found objects) where ``holds``."""
    if all(holds):
        return alive, found
    return list(compress(alive, holds)), [list(compress(c, holds)) for c in found]


class HopSweeps:
    """The first-hop sweeps (:func:`_first_hop`) of one build, kept by check (its part,
    class and layout) with the modules they swept: a later proof of the same check over the
    same modules (the params' and the derived tensors' templates read one source) takes
    the kept answer instead of sweeping again. Made per ``build_graph``, which writes
    nothing to the model while it runs."""

    def __init__(self) -> None:
        self._kept: dict[Any, tuple[list[nn.Module], list[Any]]] = {}

    def sweep(self, modules: list[nn.Module], check: Check,
              swept: Callable[[], list[Any]]) -> list[Any]:
        """``swept()`` (the first hop of every module of ``modules``), or a copy of what it
        gave for the same check over the same modules (each the same object) before."""
        try:
            key = (check.part, check.cls, check.layout)
            kept = self._kept.get(key)
        except TypeError:  # a layout that does not hash: not kept
            return swept()
        if kept is not None and len(kept[0]) == len(modules) \
                and all(map(is_, kept[0], modules)):
            return list(kept[1])
        got = swept()
        self._kept[key] = (modules, list(got))
        return got


    def own_first(self, modules: list[nn.Module]) -> Any:
        """The device of the first own parameter of every module of ``modules`` (one
        class) where a kept sweep proves it: a sweep over these very modules (the first it
        swept) that found on each a tensor of its layout at its part, where that part is
        the first key of each module's ``_parameters`` (so that tensor is the first value
        there: ``_modules``, read before it, would have given a module, not a tensor); its
        layout's device (the sweep compared each tensor's). None else (nothing proven)."""
        n = len(modules)
        if not n:
            return None
        firsts: list[Any] | None = None
        for (part, cls, layout), (swept, got) in self._kept.items():
            if type(modules[0]) is not cls or len(swept) < n:
                continue
            if firsts is None:  # each module's first own parameter's name
                firsts = list(map(next, map(iter, map(_PARAMS, modules)), repeat(None)))
            if firsts == [part] * n and all(map(is_, swept, modules)) \
                    and all(map(is_not, got[:n], repeat(None))):
                return layout[4]
        return None


_PARAMS = attrgetter("_parameters")


def _first_hop(modules: list[nn.Module], dicts: list[dict[str, Any]], alive: list[int],
               check: Check, sweeps: HopSweeps | None = None) -> list[Any]:
    """Per alive row: the tensor at the check's first hop when the module is of the check's
    class and the tensor has the fact's layout, else None (``dicts``: each module's
    ``__dict__``; ``sweeps``: the build's kept sweeps, if any)."""
    if len(alive) < len(modules):
        modules, dicts = list(map(modules.__getitem__, alive)), list(map(dicts.__getitem__, alive))
    if sweeps is None:
        return _hop(modules, dicts, check)
    return sweeps.sweep(modules, check, lambda: _hop(modules, dicts, check))


def _hop(modules: list[nn.Module], dicts: list[dict[str, Any]], check: Check) -> list[Any]:
    """:func:`_first_hop` on every row of ``modules``."""
    same = list(map(is_, map(type, modules), repeat(check.cls)))
    if all(same):
        return _sweep(dicts, check)
    swept = iter(_sweep(list(compress(dicts, same)), check))
    return [next(swept) if ok else None for ok in same]


def _sweep(dicts: list[dict[str, Any]], check: Check) -> list[Any]:
    """The first hop of every module (its ``__dict__``; read from its registries in
    :func:`~derivgraph.paths.step_into`'s order), None where its layout is not the fact's."""
    part, n = check.part, len(dicts)
    got: list[Any] = [None] * n
    done = [False] * n
    for registry in MODULE_REGISTRIES:
        if not any(map(contains, map(registry, dicts), repeat(part))):
            continue  # held by none (no list made; stops at the first that holds it)
        held = list(map(registry, dicts))
        has = list(map(contains, held, repeat(part)))
        if all(has) and not any(done):
            got = list(map(getitem, held, repeat(part)))
            break
        for i in compress(range(n), has):
            if not done[i]:
                got[i], done[i] = held[i][part], True
    cls, shape, stride, dtype, device = check.layout
    ok = list(map(is_, map(type, got), repeat(cls)))
    if all(ok) and _all_layout(got, shape, stride, dtype, device):
        return got
    rows, sub = list(compress(range(n), ok)), list(compress(got, ok))
    result: list[Any] = [None] * n
    for i, tensor, good in zip(rows, sub, _layout_ok(sub, shape, stride, dtype, device),
                               strict=True):
        if good:
            result[i] = tensor
    return result


def _all_layout(got: list[Any], shape: Any, stride: Any, dtype: Any, device: Any) -> bool:
    """Whether every tensor of ``got`` has the layout (one sweep per field; the stride read
    by :func:`~derivgraph.column_layout.tensor_method` of their classes).

    Where every class is a plain tensor or parameter (its layout reads are the tensor's own)
    and torch has TorchDynamo's ``TensorGuards``, a guard built from the first tensor, once
    the fields prove it of the layout, is tried first (one C++ check per tensor,
    :func:`_guarded`): it passes only for a tensor of the first's Python type, dispatch keys,
    dtype, device, ``requires_grad``, sizes and strides, so only for one of the layout; where
    it fails for a tensor, the sweeps decide."""
    n = len(got)
    strides = tensor_method(set(map(type, got)), "stride")
    if n >= _GUARD_MIN and strides is _STRIDE and _guarded(got, shape, stride, dtype, device):
        return True
    return list(map(_shape, got)) == [shape] * n and list(map(strides, got)) == [stride] * n \
        and list(map(_dtype, got)) == [dtype] * n and list(map(_device, got)) == [device] * n


def _guarded(got: list[Any], shape: Any, stride: Any, dtype: Any, device: Any) -> bool:
    """Whether ``got`` (plain tensors or parameters) pass a ``TensorGuards`` of the first
    tensor, built where its fields are the layout's (read as :func:`_all_layout` reads them);
    False where they are not, or where torch has no such guard or refuses to build it."""
    first = got[0]
    if _TensorGuards is None or first.shape != shape or first.stride() != stride \
            or first.dtype != dtype or first.device != device:
        return False
    try:
        guard = _TensorGuards(first, dynamic_dims_sizes=None, dynamic_dims_strides=None)
    except (TypeError, RuntimeError):  # a torch whose private signature differs
        return False
    return all(map(guard.check, got))


def _layout_ok(got: list[Any], shape: Any, stride: Any, dtype: Any, device: Any) -> list[bool]:
    """Per tensor of ``got``: whether it has the layout (the fields compared as
    :func:`~derivgraph.compiler.stamp.facts_hold` compares them; the stride read as
    :func:`_all_layout` reads it)."""
    strides = tensor_method(set(map(type, got)), "stride")
    return [a and b and c and d for a, b, c, d in zip(
        map(eq, map(_shape, got), repeat(shape)), map(eq, map(strides, got), repeat(stride)),
        map(eq, map(_dtype, got), repeat(dtype)), map(eq, map(_device, got), repeat(device)),
        strict=True)]
