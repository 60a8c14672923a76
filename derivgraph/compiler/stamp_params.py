"""Params stamped like formulas: a layer whose param reads give the template's facts takes its
params.

A spec's params (``E: w.shape[0]``) are resolved on every bound module before its formulas
(the formula templates are keyed by them). Their resolution reads the model only through the
probes of :mod:`derivgraph.compiler.reads` (a path's tensor layout, a config value, an
``each()`` expansion) and folds constants; so the first layer of a spec and class is resolved
with its reads recorded, and becomes a params template when it resolved without an issue,
made no graph node (a param that is a tensor reports an issue), read only describable
facts, none of them a node's meta value, and holds only numbers, strings and tuples of them
(no config list the layers would share). Another layer of the same spec and class whose probes
give the same facts has the same params (a copy of the template's dict).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Sequence
from functools import partial
from itertools import compress, count, repeat, takewhile
from operator import is_
from typing import Any

from derivgraph.compiler.bind import BoundSpec, modules_of, rows_of, specs_of
from derivgraph.compiler.graph import DerivedGraph
from derivgraph.compiler.reads import Reads, probe_meta
from derivgraph.compiler.resolve import resolve_params
from derivgraph.compiler.stamp import MAX_TEMPLATES, facts_hold, stamping_enabled
from derivgraph.compiler.stamp_columns import HopSweeps, Stacks, column_provable, rows_hold

__all__ = ["ParamStamper"]


_ATOMS = (int, float, bool, str, type(None))


def _immutable(value: Any) -> bool:
    """A number, string, None, or a tuple of them: a value a copy of the dict may share."""
    return isinstance(value, _ATOMS) or (type(value) is tuple and all(map(_immutable, value)))


def _param_matches(graph: DerivedGraph, reads: Reads, bound: BoundSpec) -> bool:
    """Whether every probe of the params template gives the same fact on ``bound``."""
    return facts_hold(graph, reads, bound, {}) is not None


class ParamStamper:
    """Resolves the params of each bound spec, from a template where the facts allow."""

    def __init__(self, graph: DerivedGraph, bounds: Sequence[BoundSpec] = (),
                 sweeps: HopSweeps | None = None):
        self.graph = graph
        self.sweeps = sweeps  # the build's first-hop sweeps, shared with its Stamper
        self.templates: dict[Any, list[tuple[Reads, dict[str, Any]]]] = {}
        self.stamped = 0  # bound specs whose params came from a template
        # every bound spec, in resolution order (row ``at`` of :meth:`resolve`): a kind's
        # first template proves the later rows of its kind by columns
        self.stacks = Stacks(bounds)
        self.proven: dict[int, Reads] = {}  # row -> the template that proved it

    def resolve(self, bound: BoundSpec, at: int | None = None) -> dict[str, Any] | None:
        """The params of ``bound`` (row ``at`` of the bound specs the stamper was made with,
        if it is one; None: an issue was reported), as :func:`resolve_params`."""
        graph = self.graph
        if not (stamping_enabled() and bound.module_path and bound.spec.params):
            return resolve_params(graph, bound)
        kinds = self.templates.setdefault((id(bound.spec), type(bound.module)), [])
        if kinds and self.proven and at is not None \
                and self.proven.pop(at, None) is kinds[0][0]:
            self.stamped += 1  # its kind's first template proved it (a column proof)
            return dict(kinds[0][1])
        for reads, params in kinds:
            if _param_matches(graph, reads, bound):
                self.stamped += 1
                return dict(params)
        if len(kinds) >= MAX_TEMPLATES:
            return resolve_params(graph, bound)
        reads, issues = Reads(), len(graph.issues)
        params = resolve_params(graph, bound, reads)
        if params is not None and reads.keyable and not reads.calls \
                and len(graph.issues) == issues \
                and all(probe is not probe_meta for probe, _ in reads.facts) \
                and all(map(_immutable, params.values())):
            kinds.append((reads, dict(params)))
            if len(kinds) == 1 and at is not None and column_provable(reads, False):
                self._prove(reads, at)
        return params

    def proven_after(self, at: int) -> list[dict[str, Any]]:
        """The params of the rows right after row ``at``, one after another, that one
        template proved by columns (each row's copy, counted as :meth:`resolve` gives and
        counts it): those rows are resolved, :meth:`resolve` is not called for them."""
        proven = self.proven
        reads = proven.get(at + 1)
        if reads is None:
            return []
        bounds = self.stacks.bounds
        (first, params), *_ = self.templates[(id(specs_of(bounds)[at + 1]),
                                              type(modules_of(bounds)[at + 1]))]
        if first is not reads:  # another template is the first (not reached: proofs are
            return []  # made by the first only)
        # the stretch of rows from at + 1 that it proved, found and taken out by C-level sweeps
        size = len(list(takewhile(partial(is_, reads), map(proven.get, count(at + 1)))))
        deque(map(proven.__delitem__, range(at + 1, at + 1 + size)), maxlen=0)
        self.stamped += size
        return list(map(dict, repeat(params, size)))  # each row's copy, one C-level sweep

    def _prove(self, reads: Reads, at: int) -> None:
        """Prove the template's facts on the later rows of its spec and class by columns
        (:func:`~derivgraph.compiler.stamp_columns.rows_hold`: path and ``each()`` facts only,
        which no resolution changes); a proven row takes the template's params."""
        rows = self.stacks.later(at)
        bounds = rows_of(self.stacks.bounds, rows)
        self.proven.update(compress(zip(rows, repeat(reads)),
                                    rows_hold(self.graph, reads, bounds, [{}] * len(rows),
                                              self.sweeps)))
