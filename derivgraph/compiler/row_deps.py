"""The source dependencies of closed stamped rows, read off their template by position.

A closed row (:func:`~derivgraph.compiler.layers.closed_layers`) is its template's subgraph
renamed: each node has the template node's kind and op at the same position and reads the
row's own nodes at the template's input positions, or a shared constant (an op with no
inputs, so no source). So the sources a row's node depends on are the row's nodes at the
positions of the sources its template node depends on. :func:`row_source_deps` computes those
positions once per template and builds every row's sets a column at a time, instead of a
walk over every node of every row (:meth:`DerivedGraph.source_deps
<derivgraph.compiler.graph.DerivedGraph.source_deps>` walks only what is left).

The compile reads no row's set: its readers take a template's (the constants sweep answers
a column by its template, ``planner._constant_entries``; the lowering asks the templates and
the rest), and a run or refill reads none (only a run with ``updated=`` and the trace's proof
read the whole mapping). So every column of the rows is kept aside and put in on first need
(:class:`SourceDeps`), and no row's set is made until then: at 100k derived tensors 50k
frozensets fewer for the compile to make and the plan to keep (the collector walks none) and
100k dict entries fewer.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from functools import cache, partial
from typing import Any

from derivgraph.compiler.instances import InstanceTable
from derivgraph.compiler.ir import Node, NodeKind

__all__ = ["KeptAside", "SourceDeps", "row_source_deps", "template_dep_positions"]


def template_dep_positions(nodes: Mapping[str, Node], template: tuple[str, ...],
                           ) -> list[tuple[int, ...]] | None:
    """Per template position: the positions of the template's sources it depends on (in
    ascending order); None when a node reads a node outside the template that is not a
    constant (an op with no inputs), or the template holds a cycle."""
    own = {n: i for i, n in enumerate(template)}
    found: dict[int, frozenset[int]] = {}
    on_stack: set[int] = set()

    def deps(i: int) -> frozenset[int] | None:
        got = found.get(i)
        if got is not None:
            return got
        if i in on_stack:
            return None
        node = nodes[template[i]]
        if node.kind is NodeKind.SOURCE:
            found[i] = frozenset((i,))
            return found[i]
        on_stack.add(i)
        out: frozenset[int] = frozenset()
        for ref in node.inputs:
            at = own.get(ref)
            if at is None:
                outside = nodes.get(ref)
                if outside is None or outside.kind is not NodeKind.OP or outside.inputs:
                    return None
                continue
            sub = deps(at)
            if sub is None:
                return None
            out |= sub
        on_stack.discard(i)
        found[i] = out
        return out

    positions = []
    for i in range(len(template)):
        got = deps(i)
        if got is None:
            return None
        positions.append(tuple(sorted(got)))
    return positions


#: the set of a node that depends on no source (one object for every such row)
_EMPTY: frozenset[str] = frozenset()

#: a column's sets, in row order, or what makes them (once) when first needed
RowSets = list[frozenset[str]] | Callable[[], list[frozenset[str]]]


def _row_sets(columns: Sequence[Sequence[str]], at: tuple[int, ...]) -> list[frozenset[str]]:
    """Each row's set of its nodes at positions ``at`` of ``columns`` (none: the empty set,
    one for every row)."""
    if not at:
        return [_EMPTY] * len(columns[0])
    return list(map(frozenset, zip(*[columns[j] for j in at])))


class KeptAside(dict[str, Any]):
    """A dict where some columns of keys are kept aside (:meth:`defer`) and put in, all at
    once, on first need (:meth:`complete`): a key not in the dict (``__missing__``, ``in``,
    ``get``), or any read of the size, keys, values or items. A read of a key that is in
    answers as the dict's own (``[]`` at C speed). Writes are the dict's own (a writer never
    writes a key kept aside: the put-in would overwrite it)."""

    def __init__(self, *args: Any) -> None:
        super().__init__(*args)
        self._deferred: list[tuple[Iterable[str], Any]] = []

    def defer(self, keys: Iterable[str], values: Any) -> None:
        """Keep ``keys`` -> ``values`` (in order; a callable: called for them then) aside
        until :meth:`complete`."""
        self._deferred.append((keys, values))

    @property
    def pending(self) -> bool:
        """Whether some columns are still kept aside."""
        return bool(self._deferred)

    def complete(self) -> None:
        """Put every column kept aside in (a no-op once done)."""
        deferred, self._deferred = self._deferred, []
        for keys, values in deferred:
            dict.update(self, zip(keys, values() if callable(values) else values))

    def __missing__(self, key: str) -> Any:
        if not self._deferred:
            raise KeyError(key)
        self.complete()
        return dict.__getitem__(self, key)

    def __contains__(self, key: object) -> bool:
        if dict.__contains__(self, key):
            return True
        self.complete()
        return dict.__contains__(self, key)

    def get(self, key: str, default: Any = None) -> Any:  # type: ignore[override]
        if not dict.__contains__(self, key):
            self.complete()
        return dict.get(self, key, default)

    def __len__(self) -> int:
        self.complete()
        return dict.__len__(self)

    def __iter__(self) -> Iterator[str]:
        self.complete()
        return dict.__iter__(self)

    def keys(self) -> Any:
        self.complete()
        return dict.keys(self)

    def values(self) -> Any:
        self.complete()
        return dict.values(self)

    def items(self) -> Any:
        self.complete()
        return dict.items(self)

    def copy(self) -> dict[str, Any]:
        self.complete()
        return dict(dict.items(self))

    def __eq__(self, other: object) -> bool:
        self.complete()
        if isinstance(other, KeptAside):
            other.complete()
        return dict.__eq__(self, other)

    def __ne__(self, other: object) -> bool:
        return not self == other

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        self.complete()
        return dict.__repr__(self)


class SourceDeps(KeptAside):
    """Node id -> the source nodes it depends on (a frozenset), the closed rows' columns
    kept aside (:class:`KeptAside`)."""


def row_source_deps(nodes: Mapping[str, Node], tables: Iterable[InstanceTable],
                    read: list[InstanceTable] | None = None) -> SourceDeps:
    """Every node of every row of ``tables`` (closed rows only) -> the source nodes it
    depends on, every column kept aside (:meth:`SourceDeps.defer`: a position set's rows'
    sets made once, when first needed); the rows of a template whose positions cannot be read
    (:func:`template_dep_positions`) are left out. ``read``: where given, each table whose
    rows are in the answer is appended to it, in order."""
    deps = SourceDeps()
    for table in tables:
        positions = template_dep_positions(nodes, table.template)
        if positions is None or not table.rows:
            continue
        if read is not None:
            read.append(table)
        columns = table.columns()
        sets: dict[tuple[int, ...], RowSets] = {}  # one maker per position set
        for k, at in enumerate(positions):
            made = sets.get(at)
            if made is None:  # kept aside: made once, when first needed
                made = sets[at] = cache(partial(_row_sets, columns, at))
            deps.defer(columns[k], made)
    return deps
