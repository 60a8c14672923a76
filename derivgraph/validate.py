"""Checks that need no model: formula syntax, ops and arity, alias targets, cycles, duplicates.

These run in ``derivgraph validate`` and at load time of a plan; binding to a live model adds
the checks that need one (sources exist, shapes and dtypes, adoption).
"""

from __future__ import annotations

from collections.abc import Iterable

import networkx as nx

from .engine_values import defers_validation, is_engine
from .errors import Rule, SpecIssue
from .expr import Attr, Call, Comp, Expr, FormulaError, Index, ListExpr, Name, Slice, parse_formula
from .fold import declaration_issues, is_fold
from .ops import DTYPES
from .spec import Spec

__all__ = ["names_in", "spec_graph", "validate_specs"]


def names_in(expr: Expr, bound: frozenset[str] = frozenset()) -> set[str]:
    """Root names a formula reads (the first piece of each attribute path)."""
    if isinstance(expr, Name):
        return set() if expr.id in bound else {expr.id}
    if isinstance(expr, Attr):
        return names_in(expr.base, bound)
    if isinstance(expr, Index):
        out = names_in(expr.base, bound)
        for i in expr.index:
            out |= names_in(i, bound)
        return out
    if isinstance(expr, Slice):
        return set().union(*(names_in(p, bound) for p in (expr.lower, expr.upper, expr.step) if p))
    if isinstance(expr, ListExpr):
        return set().union(set(), *(names_in(i, bound) for i in expr.items))
    if isinstance(expr, Call):
        out = set()
        for a in expr.args:
            out |= names_in(a, bound)
        for _, v in expr.kwargs:
            out |= names_in(v, bound)
        return out
    if isinstance(expr, Comp):
        return names_in(expr.element, bound | {expr.var})
    return set()


def spec_graph(spec: Spec) -> nx.DiGraph:
    """Name-level dependency graph of one spec: derived tensors, params and source names."""
    g = nx.DiGraph()
    derived = {d.name for d in spec.derived}
    for p in spec.params:
        g.add_node(p, kind="param")
    for d in spec.derived:
        # fold hook: a fold transforms its source in place (a self-edge, not a cycle)
        g.add_node(d.name, kind="fold" if is_fold(d) else "derived", derived_kind=d.kind)
    for d in spec.derived:
        text = d.of if d.kind == "alias" else d.formula
        try:
            expr = parse_formula(text or "")
        except FormulaError:
            continue
        for name in names_in(expr):
            if name in DTYPES or name in ("True", "False", "None"):
                continue
            if name not in g:
                g.add_node(name, kind="derived" if name in derived else "source")
            g.add_edge(name, d.name)
    return g


def validate_specs(specs: Iterable[Spec]) -> list[SpecIssue]:
    """Every model-independent issue in ``specs``."""
    issues: list[SpecIssue] = []
    seen: dict[str, Spec] = {}
    for spec in specs:
        if spec.name in seen:
            issues.append(SpecIssue(Rule.DUPLICATE, f"spec name {spec.name!r} is also used at "
                                    f"{seen[spec.name].location}", "give every spec a unique name",
                                    spec.location, spec.name))
        seen[spec.name] = spec
        for name, text in spec.params.items():
            try:
                parse_formula(text)
            except FormulaError as exc:
                issues.append(SpecIssue(exc.rule, f"param {name}: {exc.message}", exc.fix,
                                        spec.location, f"{spec.name}:{name}"))
        names = {d.name for d in spec.derived}
        for d in spec.derived:
            text = d.of if d.kind == "alias" else d.formula
            node = f"{spec.name}:{d.name}"
            if is_engine(d) and not text:  # engine hook: no formula is fine
                continue
            try:
                expr = parse_formula(text or "")
            except FormulaError as exc:
                if defers_validation(d, exc):  # engine hook: op registered later by the engine
                    continue
                issues.append(SpecIssue(exc.rule, f"{text!r}: {exc.message}", exc.fix,
                                        d.location, node))
                continue
            if is_fold(d):  # fold hook
                issues.extend(declaration_issues(d, expr, node))
            if d.kind == "alias" and not isinstance(expr, (Name, Attr)):
                issues.append(SpecIssue(Rule.ALIAS, f"alias target {text!r} is not a name or path",
                                        "`of` names a derived tensor of this spec or a source path",
                                        d.location, node))
            if d.kind == "alias" and isinstance(expr, Name) and expr.id == d.name and \
                    expr.id in names and sum(x.name == d.name for x in spec.derived) == 1:
                issues.append(SpecIssue(Rule.ALIAS, "an alias cannot be its own target",
                                        "point `of` at another tensor", d.location, node))
            if d.shape:
                for item in d.shape:
                    if isinstance(item, str) and item not in spec.params:
                        issues.append(SpecIssue(
                            Rule.UNKNOWN_NAME, f"shape item {item!r} is not a param of this spec",
                            f"declare it under params or use a number ({sorted(spec.params)})",
                            d.location, node))
            if d.dtype and d.dtype not in DTYPES:
                issues.append(SpecIssue(Rule.SCHEMA, f"unknown dtype {d.dtype!r}",
                                        f"use one of {', '.join(sorted(DTYPES))}",
                                        d.location, node))
        g = spec_graph(spec)
        derived_only = g.subgraph([n for n, k in g.nodes(data="kind") if k == "derived"])
        for cycle in nx.simple_cycles(derived_only):
            if len(cycle) == 1 and any(d.kind == "alias" for d in spec.derived
                                       if d.name == cycle[0]):
                continue
            order = [d.name for d in spec.derived]
            start = min(range(len(cycle)), key=lambda i: order.index(cycle[i]))
            cycle = cycle[start:] + cycle[:start]
            first = next(d for d in spec.derived if d.name == cycle[0])
            issues.append(SpecIssue(Rule.CYCLE, "derived tensors depend on each other in a "
                                    f"cycle: {' -> '.join([*cycle, cycle[0]])}",
                                    "break the cycle: a derived tensor may not depend on itself",
                                    first.location, f"{spec.name}:{cycle[0]}"))
    return issues
