"""Per-spec isolation: one bad spec is dropped, every other spec still compiles into one plan.

:func:`compile_isolated` calls :func:`~derivgraph.planner.compile_plan` over every spec. When
that raises a derivgraph error, the specs the error's issues point at (by file and line, or by
the node they name) are dropped and the rest compile again, until a plan compiles; an error
that names no spec is narrowed down by compiling each remaining spec alone (a spec that fails
does so before touching any tensor; one that compiles alone binds its tensors, which the final
plan then adopts). Each dropped spec is logged loudly (``ERROR`` on the
``vllm.derivgraph`` logger, a child of the ``vllm`` logger vLLM configures) naming the spec,
the classes it targets and the rule it broke. ``strict`` raises the first error instead.

The result is still one plan per model; what the dropped specs would have kept is left to the
guard (:mod:`derivgraph.guard`), which covers every tensor no plan declares.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from derivgraph.errors import DerivgraphError, Rule, SpecIssue

if TYPE_CHECKING:
    from torch import nn

    from derivgraph.runtime.plan import Plan
    from derivgraph.spec.model import Spec

__all__ = ["DroppedSpec", "compile_isolated"]

logger = logging.getLogger(__name__)
#: vLLM configures the ``vllm`` logger: its children show by default.
loud = logging.getLogger("vllm.derivgraph")


@dataclass(frozen=True)
class DroppedSpec:
    """A spec left out of the plan, and why."""

    spec: str
    location: str
    classes: tuple[str, ...]
    rule: Rule
    message: str

    def describe(self) -> str:
        classes = ", ".join(self.classes) or "?"
        return (f"spec {self.spec!r} ({self.location}) for {classes} dropped: {self.rule}: "
                f"{self.message}")


def _classes(spec: Spec) -> tuple[str, ...]:
    t = spec.target
    return tuple([*t.module_class, *t.quant_method_class, *t.object_class])


def _rule_of(exc: BaseException) -> Rule:
    rule = getattr(exc, "rule", None)
    issues = getattr(exc, "issues", None) or []
    if rule is None and issues:
        rule = issues[0].rule
    try:
        return Rule(rule) if rule is not None else Rule.SPEC_DROPPED
    except ValueError:
        return Rule.SPEC_DROPPED


def _owner(issue: SpecIssue, specs: list[Spec]) -> Spec | None:
    """The spec an issue was raised for: the one declared at its file and line."""
    loc = issue.location
    if not loc.line:  # no line (a spec built in Python): left to the probe
        return None
    best: Spec | None = None
    for spec in specs:
        if spec.location.file != loc.file:
            continue
        elements = [spec, spec.target, *spec.derived]
        if loc in [e.location for e in elements]:
            return spec
        if spec.location.line <= loc.line and (
                best is None or spec.location.line > best.location.line):
            best = spec
    return best


def _blame(exc: BaseException, specs: list[Spec]) -> dict[str, tuple[Rule, str]]:
    """Spec name -> (rule, message) for each spec the error's issues point at."""
    out: dict[str, tuple[Rule, str]] = {}
    for issue in getattr(exc, "issues", None) or []:
        spec = _owner(issue, specs)
        if spec is not None:
            out.setdefault(spec.name, (issue.rule, issue.message))
    return out


def _probe(model: nn.Module, specs: list[Spec], exc: BaseException,
           compile_one: Any) -> dict[str, tuple[Rule, str]]:
    """Compile each spec alone: the ones that fail are to blame."""
    out: dict[str, tuple[Rule, str]] = {}
    for spec in specs:
        try:
            compile_one(model, [spec])
        except DerivgraphError as err:
            issues = getattr(err, "issues", None) or []
            out[spec.name] = (_rule_of(err), issues[0].message if issues
                              else str(err).splitlines()[0])
    if not out:  # only the combination fails: nothing to single out
        logger.debug("every spec compiles alone; the combination fails: %s", exc)
    return out


def compile_isolated(model: nn.Module, specs: Iterable[Spec], *, strict: bool = False,
                     **options: Any) -> tuple[Plan, list[DroppedSpec]]:
    """One plan over every spec that compiles; the others are dropped and reported.

    ``strict``: raise the compile error as is (the load is refused). ``options`` go to
    :func:`~derivgraph.planner.compile_plan`. Raises the last error when no spec can be
    singled out (then nothing was compiled).
    """
    from derivgraph.planner import compile_plan

    remaining = list(specs)
    dropped: list[DroppedSpec] = []
    while True:
        try:
            return compile_plan(model, remaining, **options), dropped
        except DerivgraphError as exc:
            if strict:
                raise
            blamed = _blame(exc, remaining) or _probe(
                model, remaining, exc, lambda m, s: compile_plan(m, s, **options))
            if not blamed:
                raise
            for spec in [s for s in remaining if s.name in blamed]:
                rule, message = blamed[spec.name]
                drop = DroppedSpec(spec.name, str(spec.location), _classes(spec), rule,
                                   message)
                dropped.append(drop)
                loud.error("derivgraph: %s; every other spec still compiles, and the guard "
                           "keeps this spec's tensors instead", drop.describe())
            remaining = [s for s in remaining if s.name not in blamed]
