"""Fold declarations: an in-place transform of a source weight, applied once per load.

Some engines fold a config value into a loaded weight in place, e.g. Muse Spark's router output
multiplier (``router.weight.mul_(multiplier)``). Applied once per *post-load run* instead of
once per *load*, a reload multiplies it twice; applied once per model lifetime, a reload leaves
the new weight unfolded. A spec entry of ``kind: fold`` hands the fold to derivgraph::

    - {name: weight, owner: router, kind: fold, formula: "weight * multiplier",
       config: {multiplier: metap_output_multiplier}}

* The formula reads only the source's current (loaded) value, by its own ``name``, and the
  ``config`` values: numbers read at compile time from an attribute path looked up on the
  matched module and then on each enclosing module up to the root (the first that has it).
  ``None`` there means the engine has nothing to fold: the declaration is inactive.
* The fold keeps the source's shape and dtype; its result is ``copy_``-ed into the source. This
  is the ONLY write derivgraph ever makes to a source tensor.
* Contract: :func:`~derivgraph.planner.compile_plan` runs after the engine's first post-load step,
  which already folded once. Compile records that value as *folded*. From then on the engine's
  own fold must be inert (vLLM 0.33.0's NVIDIA Muse Spark: its first fold sets
  ``router_output_multiplier = None``); derivgraph applies the fold once after each load.
* "Loaded since the last fold" is decided by value: the plan keeps a copy of the source as it
  was right after the last fold (memory: one copy of each folded source). ``Tensor._version``
  cannot decide it: ``param.data.copy_(w)``, which vLLM's ``default_weight_loader`` and its
  layerwise copy-back use, does not bump the version counter (checked on torch 2.14).
* In a pass, a source whose value still equals its last folded value is skipped and reported
  (``report.folds_skipped``); naming it in ``run(updated=[...])`` is a claim that it was loaded,
  so a second application to the same loaded value is refused with
  :class:`FoldReappliedError` (DG081) before anything is written.
"""

from __future__ import annotations

import fnmatch
import logging
from collections.abc import Iterable
from dataclasses import dataclass, field
from itertools import repeat
from operator import is_
from typing import Any

import torch
from torch import nn

from derivgraph.compare import bits_equal
from derivgraph.compiler.bind import BoundSpec, BoundSpecs
from derivgraph.compiler.graph import DerivedGraph, NodeRef
from derivgraph.compiler.interpret import EagerInterpreter
from derivgraph.errors import (
    FoldReappliedError,
    FormulaError,
    LimitError,
    PassFault,
    Rule,
    SpecIssue,
)
from derivgraph.limits import check_bytes
from derivgraph.paths import MISSING, get_path, join
from derivgraph.spec.check import fold_formula_problem as formula_problem
from derivgraph.spec.expr import Call, Const, Expr, Name, parse_formula
from derivgraph.spec.kinds import is_fold
from derivgraph.spec.model import DerivedTensor

__all__ = ["FoldEntry", "FoldReappliedError", "FoldSet", "compile_folds", "fold_decls", "is_fold"]

logger = logging.getLogger(__name__)


@dataclass
class FoldEntry:
    """One declared fold, bound to a source tensor of the model."""

    id: str  # model path of the source tensor
    decl: DerivedTensor
    spec_name: str
    expr: Expr
    config: dict[str, Any]
    folded: torch.Tensor  # the source's value right after the last fold (a private copy)
    applied: int = 0
    graph: DerivedGraph | None = field(default=None, repr=False)  # the formula as op nodes
    result: Any = field(default=None, repr=False)  # its value: a NodeRef (or a constant)

    def compute(self, source: torch.Tensor) -> torch.Tensor:
        """The fold of ``source``'s current value (reads only)."""
        if self.graph is None:
            self.graph, self.result = fold_graph(self.expr, self.id, self.decl.name, source,
                                                 self.config)
        return evaluate_fold(self.graph, self.result, self.id, source)


@dataclass
class FoldSet:
    """Every fold of a plan; :meth:`apply` is the first step of each pass."""

    entries: dict[str, FoldEntry] = field(default_factory=dict)

    def __len__(self) -> int:
        return len(self.entries)

    def _selected(self, updated: list[str] | None) -> list[tuple[FoldEntry, bool]]:
        """(entry, named explicitly) for the folds this pass considers."""
        if updated is None:
            return [(e, False) for e in self.entries.values()]
        out = []
        for key, entry in self.entries.items():
            if any(key == n or key.startswith(n + ".") or fnmatch.fnmatchcase(key, n)
                   for n in updated):
                out.append((entry, True))
        return out

    def apply(self, model: nn.Module, updated: Iterable[str] | None, report: Any) -> None:
        """Fold each source loaded since its last fold, in place; skip (report) the rest.

        ``updated`` (kernel-format reloads): only the named sources are considered, and each
        must have been loaded since its last fold, else :class:`FoldReappliedError` is raised
        before any source is written.
        """
        names = None if updated is None else list(updated)
        plan: list[tuple[FoldEntry, torch.Tensor, torch.Tensor]] = []
        refused: list[SpecIssue] = []
        with torch.no_grad():
            for entry, named in self._selected(names):
                source = get_path(model, entry.id)
                if not isinstance(source, torch.Tensor):
                    refused.append(SpecIssue(
                        Rule.FOLD_DECLARATION, f"fold source {entry.id} is gone from the model",
                        "the engine must keep the source tensor it loads into",
                        entry.decl.location, entry.id))
                    continue
                if bits_equal(source, entry.folded):
                    if bits_equal(_computed(entry, source), source):
                        report.folds_skipped.append(entry.id)  # an identity fold: nothing to do
                        continue
                    if named:
                        refused.append(SpecIssue(
                            Rule.FOLD_REAPPLIED,
                            f"{entry.id} still holds the value folded by "
                            f"{entry.spec_name!r}: it was not loaded since, and folding it again "
                            "would apply the fold twice",
                            "name in `updated` only the sources that were loaded, or load the "
                            "weight again before running the pass", entry.decl.location,
                            entry.id))
                    else:
                        report.folds_skipped.append(entry.id)
                    continue
                plan.append((entry, source, _computed(entry, source)))
            if refused:
                raise FoldReappliedError(refused)
            for entry, source, value in plan:
                source.copy_(value)  # the one sanctioned write to a source: the declared fold
                if entry.folded.shape != source.shape or entry.folded.dtype != source.dtype:
                    entry.folded = source.detach().clone()  # a permissive reload changed it
                else:
                    entry.folded.copy_(source)
                entry.applied += 1
                report.folded.append(entry.id)


def _computed(entry: FoldEntry, source: torch.Tensor) -> torch.Tensor:
    """The fold of ``source`` (reads only); an op that raises is a :class:`PassFault` naming
    the fold, raised before any source is written."""
    try:
        return entry.compute(source)
    except Exception as exc:  # re-raised as a PassFault that names the fold
        raise PassFault(f"the fold {entry.decl.formula!r} of {entry.id} (spec {entry.spec_name} "
                        f"at {entry.decl.location}) failed: {type(exc).__name__}: {exc}. No "
                        "source was written", [entry.id]) from exc


def _lookup_config(bound: BoundSpec, model: nn.Module, path: str) -> Any:
    """``path`` on the matched module, else on each enclosing module up to the root."""
    parts = bound.module_path.split(".") if bound.module_path else []
    for cut in range(len(parts), -1, -1):
        base = get_path(model, ".".join(parts[:cut])) if cut else model
        value = get_path(base, path)
        if value is not MISSING:
            return value
    return MISSING


def fold_graph(expr: Expr, key: str, own: str, source: torch.Tensor,
               config: dict[str, Any]) -> tuple[DerivedGraph, Any]:
    """The fold formula as a graph: ``own`` is the source node ``key``, config names constants.

    Returns the graph and the formula's value (a NodeRef, or a constant).
    """
    graph = DerivedGraph(None)  # type: ignore[arg-type]  # sources are always given

    def build(e: Expr) -> Any:
        if isinstance(e, Const):
            return e.value
        if isinstance(e, Name):
            if e.id == own:
                return graph.source(key, source)
            return config.get(e.id, e.id)  # else a dtype name (checked at compile)
        assert isinstance(e, Call)
        return graph.op(e.op, tuple(build(a) for a in e.args),
                        {k: build(v) for k, v in e.kwargs})

    return graph, build(expr)


def evaluate_fold(graph: DerivedGraph, result: Any, key: str, source: torch.Tensor) -> Any:
    """The fold's value over ``source`` (the one evaluator: :class:`EagerInterpreter`)."""
    if not isinstance(result, NodeRef):
        return result
    return EagerInterpreter(graph, {key: source}).run()[result.id]


def _compile_one(model: nn.Module, bound: BoundSpec, decl: DerivedTensor,
                 issues: list[SpecIssue]) -> FoldEntry | None:
    owner_path = bound.qualify(decl.owner)
    key = join(owner_path, decl.name)

    def issue(message: str, fix: str) -> None:
        issues.append(SpecIssue(Rule.FOLD_DECLARATION, message, fix, decl.location, key))

    source = get_path(model, key)
    if not isinstance(source, torch.Tensor):
        issue(f"fold source {key} is not a tensor of the model",
              "a fold names the loaded weight it transforms: `owner` + `name` of a parameter "
              "or buffer")
        return None
    config: dict[str, Any] = {}
    for name, path in decl.config.items():
        value = _lookup_config(bound, model, path)
        if value is MISSING:
            issue(f"config value {name} = {path!r} exists neither on "
                  f"{bound.module_path or '<root>'} nor on an enclosing module",
                  "point the path at the config number the engine folds in")
            return None
        if value is not None and (isinstance(value, bool) or not isinstance(value, (int, float))):
            issue(f"config value {name} = {path!r} is a {type(value).__name__}, not a number",
                  "point the path at a number")
            return None
        config[name] = value
    if any(v is None for v in config.values()):
        logger.info("fold %s inactive: a config value is None", key)
        return None
    try:
        expr = parse_formula(decl.formula or "")
    except FormulaError as exc:
        issues.append(SpecIssue(exc.rule, f"{decl.formula!r}: {exc.message}", exc.fix,
                                decl.location, key))
        return None
    problem = formula_problem(expr, decl.name, config)
    if problem:
        issue(f"fold formula {decl.formula!r}: {problem}",
              f"write the fold over {decl.name!r} and `config` names, e.g. "
              f"'{decl.name} * multiplier'")
        return None
    graph, result = fold_graph(expr, key, decl.name, source, config)
    try:
        env = EagerInterpreter(graph, {key: source.detach().to("meta")}).run()
        meta = env[result.id] if isinstance(result, NodeRef) else result
        for value in env.values():  # every intermediate: the pass would allocate it
            if isinstance(value, torch.Tensor):
                check_bytes(value.shape, value.element_size(), key)
    except LimitError as exc:
        issues.append(SpecIssue(exc.rule, exc.message, exc.fix, decl.location, key))
        return None
    except (RuntimeError, TypeError, ValueError, LookupError, ArithmeticError) as exc:
        issue(f"fold formula {decl.formula!r} fails on the source's shape and dtype: {exc}",
              "check the ops and the source tensor")
        return None
    if not isinstance(meta, torch.Tensor) or meta.shape != source.shape or \
            meta.dtype != source.dtype:
        got = f"{list(meta.shape)} {meta.dtype}" if isinstance(meta, torch.Tensor) else repr(meta)
        issue(f"fold formula {decl.formula!r} gives {got}, but a fold must keep its source's "
              f"shape and dtype ({list(source.shape)} {source.dtype})",
              "cast back to the source dtype, e.g. cast(weight * m, bfloat16)")
        return None
    folded = source.detach().clone()  # compile contract: the engine already folded once
    return FoldEntry(key, decl, bound.spec.name, expr, config, folded, graph=graph, result=result)


def compile_folds(model: nn.Module, bound_specs: Iterable[BoundSpec],
                  issues: list[SpecIssue], derived_ids: Iterable[str] = ()) -> FoldSet:
    """Bind every fold declaration; problems are appended to ``issues`` (nothing is written).
    Each spec's fold declarations are picked out once (:func:`fold_decls`; where one spec
    without folds is every row's, no row is visited), and
    ``derived_ids`` is read into a set at the first fold bound: a build without folds reads
    neither per module nor per derived tensor."""
    folds = FoldSet()
    derived: set[str] | None = None  # derived_ids, read at the first fold entry
    bound_specs = BoundSpecs.of(bound_specs)  # its rows made only where a row is visited
    of_spec: dict[int, list[DerivedTensor]] = {}  # id(spec) -> its fold declarations
    specs = bound_specs.specs
    if specs and all(map(is_, specs, repeat(specs[0]))):  # one spec on every row (common)
        if not of_spec.setdefault(id(specs[0]), fold_decls(specs[0].derived)):
            return folds  # without folds: no row visited
    for bound in bound_specs:
        decls = of_spec.get(id(bound.spec))
        if decls is None:
            decls = of_spec[id(bound.spec)] = fold_decls(bound.spec.derived)
        for decl in decls:
            entry = _compile_one(model, bound, decl, issues)
            if entry is None:
                continue
            if derived is None:
                derived = set(derived_ids)
            if entry.id in folds.entries or entry.id in derived:
                other = folds.entries.get(entry.id)
                where = f"{other.spec_name} ({other.decl.location})" if other else \
                    "a derived-tensor declaration"
                issues.append(SpecIssue(
                    Rule.DUPLICATE, f"{entry.id} is folded by {bound.spec.name!r} and also "
                    f"declared by {where}", "declare one fold per source; fold several factors "
                    "in one formula", decl.location, entry.id))
                continue
            folds.entries[entry.id] = entry
    return folds


def fold_decls(decls: Iterable[DerivedTensor]) -> list[DerivedTensor]:
    """The fold declarations of ``decls`` (:func:`is_fold`), in order: the ones
    :func:`compile_folds` binds on each module a spec matched."""
    return [decl for decl in decls if is_fold(decl)]
