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

from typing import Any

from derivgraph.compiler.bind import BoundSpec
from derivgraph.compiler.graph import DerivedGraph
from derivgraph.compiler.reads import Reads, probe_meta
from derivgraph.compiler.resolve import resolve_params
from derivgraph.compiler.stamp import MAX_TEMPLATES, facts_hold, stamping_enabled

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

    def __init__(self, graph: DerivedGraph):
        self.graph = graph
        self.templates: dict[Any, list[tuple[Reads, dict[str, Any]]]] = {}
        self.stamped = 0  # bound specs whose params came from a template

    def resolve(self, bound: BoundSpec) -> dict[str, Any] | None:
        """The params of ``bound`` (None: an issue was reported), as :func:`resolve_params`."""
        graph = self.graph
        if not (stamping_enabled() and bound.module_path and bound.spec.params):
            return resolve_params(graph, bound)
        kinds = self.templates.setdefault((id(bound.spec), type(bound.module)), [])
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
        return params
