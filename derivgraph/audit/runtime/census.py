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

import time
from dataclasses import dataclass, field
from typing import Any

import torch

from derivgraph.audit.runtime.fingerprint import fingerprint
from derivgraph.audit.runtime.records import Census, CensusEntry, TensorIdentity
from derivgraph.audit.runtime.walk import Walker, gc_paused

__all__ = ["Census", "CensusEntry", "Reach", "TensorIdentity", "fingerprint", "gc_paused",
           "reach", "take_census"]


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
    walker = Walker(census, max_depth=max_depth, max_objects=max_objects,
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


class _ReachWalker(Walker):
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
