"""The one model-free rule set: :func:`check_specs`.

It runs in ``derivgraph validate`` and at the top of ``compile_plan`` (so both report the same
codes): duplicate names, unsafe names and paths, formula syntax, ops and arity, resource
limits, alias targets, view formulas that copy, fold formulas, shape items, dtypes, devices and
cycles. Binding to a live model adds the checks that need one
(:func:`derivgraph.compiler.bind.check_bindings`, sources, shapes, adoption). Nothing here
imports torch, except to ask whether a declared CUDA device exists.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Iterable

import networkx as nx

from derivgraph.errors import LimitError, Rule, SourceLocation, SpecIssue
from derivgraph.limits import LIMITS, check_budget, check_entry_count, check_path
from derivgraph.spec.expr import (
    Attr,
    Call,
    Comp,
    Const,
    Expr,
    FormulaError,
    Index,
    ListExpr,
    Name,
    Slice,
    dtype_names,
    op_signature,
    parse_formula,
)
from derivgraph.spec.formulas import formula_problems
from derivgraph.spec.kinds import OpKind, TensorKind, is_engine, is_fold
from derivgraph.spec.model import DerivedTensor, Spec, split_type_name, unsafe_name

__all__ = ["check_device", "check_specs", "fold_formula_problem", "names_in", "spec_graph"]

logger = logging.getLogger(__name__)


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
    dtypes = dtype_names()
    for p in spec.params:
        g.add_node(p, kind="param")
    for d in spec.derived:
        # a fold transforms its source in place (a self-edge, not a cycle)
        g.add_node(d.name, kind="fold" if is_fold(d) else "derived", derived_kind=d.kind)
    for d in spec.derived:
        text = d.of if d.kind == TensorKind.ALIAS else d.formula
        try:
            expr = parse_formula(text or "")
        except FormulaError:
            continue
        for name in names_in(expr):
            if name in dtypes or name in ("True", "False", "None"):
                continue
            if name not in g:
                g.add_node(name, kind="derived" if name in derived else "source")
            g.add_edge(name, d.name)
    return g


# ---- fold declarations -------------------------------------------------------------------------
# A fold formula reads only its own source (by the declaration's ``name``) and ``config`` values,
# combined with ops that transform a tensor (never a creation op); see
# :mod:`derivgraph.compiler.fold`, which applies the same rule when it compiles a fold.


def fold_formula_problem(expr: Expr, own: str, config: Iterable[str]) -> str | None:
    """Why ``expr`` is not a valid fold formula over ``own`` and ``config`` names, or None."""
    names = set(config)
    if isinstance(expr, Const):
        return None
    if isinstance(expr, Name):
        if expr.id == own or expr.id in names or expr.id in dtype_names():
            return None
        return (f"{expr.id!r} is neither the folded tensor {own!r} nor a `config` value "
                f"({', '.join(sorted(names)) or 'none declared'})")
    if isinstance(expr, Call):
        sig = op_signature(expr.op)
        if sig is not None and sig.kind == OpKind.CREATE:
            return f"{expr.op}(...) creates a tensor; a fold transforms its source"
        for part in (*expr.args, *(v for _, v in expr.kwargs)):
            problem = fold_formula_problem(part, own, names)
            if problem:
                return problem
        return None
    return "a fold formula may only combine its source and config values with ops"


def _fold_issues(decl: DerivedTensor, expr: Expr, node: str) -> list[SpecIssue]:
    """Model-independent problems of a fold declaration."""
    problem = fold_formula_problem(expr, decl.name, decl.config)
    if problem is None:
        return []
    return [SpecIssue(Rule.FOLD_DECLARATION, f"fold formula {decl.formula!r}: {problem}",
                      f"write the fold over {decl.name!r} and `config` names",
                      decl.location, node)]


_DEVICE = re.compile(r"^(cpu|meta|cuda)(:\d+)?$")
_OTHER_DEVICE = re.compile(r"^[a-z]+:\d+$")


def check_device(text: str) -> str | None:
    """Why a declared ``device:`` string names no usable device, else None.

    ``cpu``/``meta`` always exist; ``cuda[:N]`` is checked against the CUDA devices present
    (this imports torch, and only then). Other strings are source paths, checked at bind time.
    """
    m = _DEVICE.match(text)
    if m is None:
        if _OTHER_DEVICE.match(text):
            return f"{text!r} is not a device derivgraph supports (cpu, cuda, cuda:N, meta)"
        return None
    if m.group(1) != "cuda":
        return None if m.group(1) == "cpu" or not m.group(2) else \
            f"{text!r}: {m.group(1)} takes no index"
    import torch

    count = torch.cuda.device_count() if torch.cuda.is_available() else 0
    index = int(m.group(2)[1:]) if m.group(2) else 0
    if index >= count:
        have = f"{count} CUDA device(s)" if count else "no CUDA device"
        return f"device {text!r} does not exist here ({have})"
    return None


def _path_issues(path: str, what: str, loc: SourceLocation, node: str) -> list[SpecIssue]:
    try:
        check_path(path, what)
    except LimitError as exc:
        return [SpecIssue(exc.rule, exc.message, exc.fix, loc, node)]
    for part in path.split(".") if path else ():
        why = unsafe_name(part)
        if why is not None:
            return [SpecIssue(Rule.UNSAFE_NAME, f"{what} {path!r}: {why}",
                              "bind and read only plain attributes the engine stores; never "
                              "nn.Module internals, methods or dunders", loc, node)]
    return []


def _copies(expr: Expr) -> bool:
    """True if a view formula's tensor chain uses an op that is not a view."""
    if isinstance(expr, (Name, Attr, Const)):
        return False
    if isinstance(expr, Index):
        return _copies(expr.base)
    if isinstance(expr, Call):
        sig = op_signature(expr.op)
        return sig is None or sig.kind != OpKind.VIEW or not expr.args or _copies(expr.args[0])
    return True


def _derived_issues(spec: Spec, d: DerivedTensor, dtypes: frozenset[str],
                    literal_bytes: dict[str, int]) -> list[SpecIssue]:
    node = f"{spec.name}:{d.name}"
    issues: list[SpecIssue] = []

    def add(rule: Rule, message: str, fix: str) -> None:
        issues.append(SpecIssue(rule, message, fix, d.location, node))

    why = unsafe_name(d.name)
    if why is not None:
        add(Rule.UNSAFE_NAME, f"name {d.name!r}: {why}",
            "choose a plain attribute name that the owner does not define (e.g. 'g1_alphas')")
    issues += _path_issues(d.owner, "owner", d.location, node)
    if d.device:
        if not _DEVICE.match(d.device) and not _OTHER_DEVICE.match(d.device):
            issues += _path_issues(d.device, "device", d.location, node)
        bad = check_device(d.device)
        if bad:
            add(Rule.UNKNOWN_DEVICE, bad, "drop `device` (the sources' device is the default) "
                "or name a device this machine has")
    text = d.of if d.kind == TensorKind.ALIAS else d.formula
    if is_engine(d) and not text:  # an engine tensor needs no formula
        return issues + _layout_issues(spec, d, dtypes, node)
    try:
        expr = parse_formula(text or "")
    except FormulaError as exc:
        if is_engine(d) and exc.rule == Rule.UNKNOWN_OP:  # the engine's op: registered later
            logger.warning("%s: %s: kind 'engine' formula %r is ignored (%s): the plan adopts "
                           "the engine's tensor and run() cannot recompute it unless the op is "
                           "registered with derivgraph.register_op", d.location, node, text,
                           exc.message)
            return issues + _layout_issues(spec, d, dtypes, node)
        shown = text if len(text or "") <= 200 else (text or "")[:200] + "..."
        add(exc.rule, f"{shown!r}: {exc.message}", exc.fix)
        return issues
    if is_fold(d):
        issues += _fold_issues(d, expr, node)
    if d.kind == TensorKind.ALIAS and not isinstance(expr, (Name, Attr)):
        add(Rule.ALIAS, f"alias target {text!r} is not a tensor path (a name or dotted path)",
            "`of` names a derived tensor of this spec or a source path")
    # `of: x` on the same owner is the alias itself (on another owner it reads the source x)
    if d.kind == TensorKind.ALIAS and isinstance(expr, Name) and expr.id == d.name \
            and not d.owner and sum(x.name == d.name for x in spec.derived) == 1:
        add(Rule.ALIAS, "an alias cannot be its own target", "point `of` at another tensor")
    if d.kind == TensorKind.VIEW and _copies(expr):
        add(Rule.ALIAS, f"view formula {text!r} uses ops that copy",
            "a view may only use view ops (slicing, view, reshape, transpose, squeeze, ...) over "
            "one tensor; use kind 'attribute' or 'buffer' for computed values")
    problems, nbytes = formula_problems(expr, node, dtypes)
    for rule, message, fix in problems:
        add(rule, message, fix)
    literal_bytes[d.location.file] = literal_bytes.get(d.location.file, 0) + nbytes
    try:
        check_budget(literal_bytes[d.location.file], LIMITS.max_file_alloc_bytes,
                     f"the literal-shaped tensors of {d.location.file}",
                     "DERIVGRAPH_MAX_FILE_BYTES")
    except LimitError as exc:
        if nbytes:  # reported once, at the declaration that crosses the budget
            add(exc.rule, exc.message, exc.fix)
    return issues + _layout_issues(spec, d, dtypes, node)


def _layout_issues(spec: Spec, d: DerivedTensor, dtypes: frozenset[str],
                   node: str) -> list[SpecIssue]:
    """Problems of a declaration's ``shape`` and ``dtype``."""
    issues: list[SpecIssue] = []
    if d.shape:
        for item in d.shape:
            if isinstance(item, str) and item not in spec.params:
                issues.append(SpecIssue(
                    Rule.UNKNOWN_NAME, f"shape item {item!r} is not a param of this spec",
                    f"declare it under params or use a number ({sorted(spec.params)})",
                    d.location, node))
    if d.dtype and d.dtype not in dtypes:
        issues.append(SpecIssue(Rule.SCHEMA, f"unknown dtype {d.dtype!r}",
                                f"use one of {', '.join(sorted(dtypes))}", d.location, node))
    return issues


def _spec_issues(spec: Spec, dtypes: frozenset[str],
                 literal_bytes: dict[str, int]) -> list[SpecIssue]:
    issues: list[SpecIssue] = []
    t = spec.target
    if t.object:
        issues += _path_issues(t.object, "target.object", t.location, spec.name)
    for path in t.where:
        base, _ = split_type_name(str(path))
        issues += _path_issues(base, "target.where", t.location, spec.name)
    for name, text in spec.params.items():
        why = unsafe_name(name)
        if why is not None:
            issues.append(SpecIssue(Rule.UNSAFE_NAME, f"param {name!r}: {why}",
                                    "rename the param", spec.location, f"{spec.name}:{name}"))
        try:
            parse_formula(text)
        except FormulaError as exc:
            issues.append(SpecIssue(exc.rule, f"param {name}: {exc.message}", exc.fix,
                                    spec.location, f"{spec.name}:{name}"))
    seen: dict[tuple[str, str], DerivedTensor] = {}
    for d in spec.derived:
        key = (d.owner, d.name)
        if key in seen:
            issues.append(SpecIssue(
                Rule.DUPLICATE, f"derived tensor {d.owner + '.' if d.owner else ''}{d.name} is "
                f"declared twice in this spec (also at {seen[key].location})",
                "keep one declaration (use kind 'alias' for a second holder)", d.location,
                f"{spec.name}:{d.name}"))
            continue
        seen[key] = d
        issues += _derived_issues(spec, d, dtypes, literal_bytes)
    if any(i.rule in (Rule.SYNTAX, Rule.RESOURCE_LIMIT) for i in issues):
        return issues  # the graph below would re-parse what already failed
    g = spec_graph(spec)
    derived_only = g.subgraph([n for n, k in g.nodes(data="kind") if k == "derived"])
    order = {d.name: i for i, d in reversed(list(enumerate(spec.derived)))}
    # one cycle per strongly connected component: linear, where listing every cycle of a
    # clique is exponential
    for component in nx.strongly_connected_components(derived_only):
        first_name = min(component, key=order.__getitem__)
        if len(component) == 1 and not derived_only.has_edge(first_name, first_name):
            continue
        if len(component) == 1 and any(d.kind == TensorKind.ALIAS for d in spec.derived
                                       if d.name == first_name):
            continue
        cycle = [u for u, _ in nx.find_cycle(derived_only.subgraph(component), first_name)]
        start = min(range(len(cycle)), key=lambda i: order[cycle[i]])
        cycle = cycle[start:] + cycle[:start]
        first = next(d for d in spec.derived if d.name == cycle[0])
        issues.append(SpecIssue(Rule.CYCLE, "derived tensors depend on each other in a "
                                f"cycle: {' -> '.join([*cycle, cycle[0]])}",
                                "break the cycle: a derived tensor may not depend on itself",
                                first.location, f"{spec.name}:{cycle[0]}"))
    return issues


def check_specs(specs: Iterable[Spec]) -> list[SpecIssue]:
    """Every model-independent issue in ``specs`` (the rules both ``validate`` and
    ``compile_plan`` apply; codes as in docs/spec-language.md)."""
    issues: list[SpecIssue] = []
    seen: dict[str, Spec] = {}
    dtypes = dtype_names()
    specs = list(specs)
    literal_bytes: dict[str, int] = {}
    crowded = _crowded_files(specs)
    issues += crowded.values()
    for spec in specs:
        if spec.location.file in crowded:
            continue
        if spec.name in seen:
            issues.append(SpecIssue(Rule.DUPLICATE, f"spec name {spec.name!r} is also used at "
                                    f"{seen[spec.name].location}", "give every spec a unique name",
                                    spec.location, spec.name))
        seen.setdefault(spec.name, spec)
        issues += _spec_issues(spec, dtypes, literal_bytes)
    return issues


def _crowded_files(specs: list[Spec]) -> dict[str, SpecIssue]:
    """Files declaring more derived entries than ``LIMITS.max_derived_per_file`` (DG016)."""
    counts: dict[str, int] = {}
    firsts: dict[str, Spec] = {}
    for spec in specs:
        counts[spec.location.file] = counts.get(spec.location.file, 0) + len(spec.derived)
        firsts.setdefault(spec.location.file, spec)
    crowded = {}
    for file, n in counts.items():
        try:
            check_entry_count(n)
        except LimitError as exc:
            crowded[file] = SpecIssue(exc.rule, exc.message, exc.fix, firsts[file].location,
                                      firsts[file].name)
    return crowded
