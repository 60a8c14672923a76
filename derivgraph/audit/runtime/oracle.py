"""The reload oracle: cold start B versus warm A -> B (and A -> B -> A), in one call.

What must hold after any reload (the notes' oracle): every graph-visible tensor keeps its
startup address, and every tensor equals a cold start of the new weights. The oracle builds
the model, takes a startup census, reloads, takes another, and diffs both against a census of
a cold start of the same weights (:mod:`derivgraph.audit.runtime.diff`). Going back to A and diffing
against the startup census (a cold start of A) catches what a same-weight reload hides.

With specs, the oracle compiles a plan on the warm model exactly as an engine would after
its first post-load step, runs ``plan.refill()`` after every reload and classifies each
finding as declared or not; so one call shows red without derivgraph and green with it.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

from derivgraph.audit.runtime.census import Census, take_census
from derivgraph.audit.runtime.declared import DeclaredSet
from derivgraph.audit.runtime.diff import CATEGORIES, FAILING, ByCategory, CensusDiff, diff_censuses
from derivgraph.audit.runtime.spec_values import SpecValueCheck, verify_spec_values
from derivgraph.planner import compile_plan
from derivgraph.runtime.report import RunReport

__all__ = ["OracleReport", "ReloadCheck", "audit_reload", "check_reload", "reload_oracle"]

logger = logging.getLogger(__name__)

W = TypeVar("W")


@dataclass
class ReloadCheck:
    """One reload and what it broke."""

    label: str
    diff: CensusDiff
    run: RunReport | None = None
    specs: SpecValueCheck | None = None  # declared tensors vs their formulas, after the reload

    def ok(self) -> bool:
        return self.diff.ok() and (self.specs is None or self.specs.ok())

    def as_json(self) -> dict[str, Any]:
        return {"label": self.label, **self.diff.as_json(),
                "plan_run": self.run.as_dict() if self.run is not None else None,
                "spec_values": self.specs.as_dict() if self.specs is not None else None}


@dataclass
class OracleReport(ByCategory):
    """Every reload check of one oracle run; ``ok()`` when none found anything."""

    checks: list[ReloadCheck] = field(default_factory=list)
    declared: int = 0
    plan: bool = False
    refilled: bool = False
    census_seconds: float = 0.0
    folds: int = 0

    def paths(self, category: str) -> list[str]:
        """Paths with a ``category`` finding in any check (deduplicated, in order)."""
        out: list[str] = []
        for check in self.checks:
            out += [p for p in check.diff.paths(category) if p not in out]
        return out

    @property
    def stale_checked(self) -> bool:
        return any(c.diff.stale_checked for c in self.checks)

    def undeclared(self) -> list[str]:
        out: list[str] = []
        for check in self.checks:
            out += [p for p in check.diff.undeclared() if p not in out]
        return out

    def recapture_required(self) -> list[str]:
        """Declared scalars the plan reported as changed: captured graphs must be recaptured."""
        out: list[str] = []
        for check in self.checks:
            if check.run is not None:
                out += [p for p in check.run.recapture_required if p not in out]
        return out

    def ok(self) -> bool:
        return all(check.ok() for check in self.checks)

    def spec_mismatches(self) -> list[str]:
        """Declared tensors whose value differed from their spec after a reload (any check)."""
        out: list[str] = []
        for check in self.checks:
            if check.specs is not None:
                out += [m.path for m in check.specs.mismatches if m.path not in out]
        return out

    def as_json(self) -> dict[str, Any]:
        """One JSON object: the union over checks up front, then each check in detail."""
        return {
            "ok": self.ok(),
            **{c: self.paths(c) for c in CATEGORIES},
            "undeclared": self.undeclared(),
            "declared": self.declared,
            "folds": self.folds,
            "plan": self.plan,
            "refilled": self.refilled,
            "stale_checked": self.stale_checked,
            "blind_spots": self.blind_spots(),
            "recapture_required": self.recapture_required(),
            "spec_mismatches": self.spec_mismatches(),
            "tensors": max((c.diff.tensors for c in self.checks), default=0),
            "changed": max((c.diff.changed for c in self.checks), default=0),
            "checks": [c.as_json() for c in self.checks],
        }

    def render(self, limit: int = 30, strict: bool = True) -> str:
        """A readable report: per check a summary line and up to ``limit`` findings; the
        last line's verdict is FAIL only with ``strict`` (else FINDINGS: a report)."""
        if self.plan:
            run = "refilled after each reload" if self.refilled else "not run (classify only)"
            folds = f" and {self.folds} fold(s)" if self.folds else ""
            head = (f"plan: {self.declared} declared derived tensor(s){folds}, {run}"
                    if self.declared or self.folds
                    else "plan: no spec matches this model, nothing declared")
        else:
            head = "no plan: every finding is undeclared"
        lines = [f"runtime audit ({head})"]
        for check in self.checks:
            lines.append(f"{check.label:<8} {check.diff.summary()}")
            findings = check.diff.findings
            for f in findings[:limit]:
                lines.append("  " + f.line())
            if len(findings) > limit:
                lines.append(f"  ... and {len(findings) - limit} more (--format json lists all)")
            if check.specs is not None:
                lines.append(f"  spec values: {check.specs.checked} declared tensor(s) compared "
                             f"with a fresh evaluation of their formulas, "
                             f"{len(check.specs.mismatches)} differ, "
                             f"{len(check.specs.not_recomputed)} not recomputable")
                lines += ["  SPEC-VALUE " + m.reason() for m in check.specs.mismatches[:limit]]
            if check.run is not None and check.run.recapture_required:
                lines.append(f"  plan: recapture required for {len(check.run.recapture_required)}"
                             " declared Python scalar(s)")
        bad = {c: len(self.paths(c)) for c in FAILING}
        verdict = "PASS" if self.ok() else "FAIL" if strict else "FINDINGS"
        heuristic = any(c.diff.heuristic for c in self.checks)
        lines.append(f"{verdict}: moved {bad['moved']}, stale {bad['stale']}, "
                     f"unrefreshed {bad['unrefreshed']}, gone {bad['gone']}, "
                     f"undeclared {len(self.undeclared())}"
                     + (f", spec values {len(self.spec_mismatches())}"
                        if any(c.specs is not None for c in self.checks) else "")
                     + ("" if self.stale_checked else " (stale not checked: no cold start)"))
        lines += self.blind_spots(heuristic)
        return "\n".join(lines)

    def blind_spots(self, heuristic: bool | None = None) -> list[str]:
        """What this run could not see, in words (empty with a cold start)."""
        if heuristic is None:
            heuristic = any(c.diff.heuristic for c in self.checks)
        cold = any(c.diff.stale_checked and c.label != "A->B->A" for c in self.checks)
        if cold:
            return []
        out = []
        if any(c.label == "A->B->A" for c in self.checks):
            out.append("note: A->B->A compares with the startup census (a cold start of A): a "
                       "tensor never refreshed holds A's value again and looks right there.")
        if heuristic:
            out.append("note: without --cold, stale values after A->B are found only by the "
                       "unrefreshed heuristic (value unchanged although every loaded tensor of "
                       "its module changed); it cannot see a tensor derived from another "
                       "module's weights, a partial reload, or a wrong new value. --cold sees all.")
        return out


def _census(model: Any, max_depth: int, keep_values: bool = True) -> Census:
    return take_census(model, max_depth=max_depth, keep_values=keep_values)


def check_reload(model: Any, reload: Callable[[Any], Any], *, label: str = "reload",
                 startup: Census | None = None, cold: Census | None = None,
                 plan: Any = None, refill: bool = True, ignore: Sequence[str] = (),
                 max_depth: int = 12, verify_specs: bool = False) -> ReloadCheck:
    """Reload ``model`` once and diff it against its startup and a cold start.

    ``startup``: the census graphs were captured against (default: taken now, before the
    reload). ``cold``: a census of a cold start of the weights ``reload`` loads (default: no
    stale check). ``plan``: a compiled :class:`~derivgraph.planner.Plan` of ``model``; with
    ``refill`` its ``refill()`` runs right after the reload, and findings are classified
    against it either way. ``verify_specs``: compare every declared tensor with a fresh
    evaluation of its formula after the reload
    (:func:`~derivgraph.audit.runtime.spec_values.verify_spec_values`).
    """
    if startup is None:
        startup = _census(model, max_depth)
    reload(model)
    run = plan.refill(verify=True) if plan is not None and refill else None
    if run is not None:
        logger.info("%s: plan %s", label, run)
    after = _census(model, max_depth)
    declared = DeclaredSet.from_plan(plan) if plan is not None else None
    diff = diff_censuses(startup, after, cold, declared=declared, ignore=ignore, model=model)
    logger.info("%s: %s", label, diff.summary())
    specs = verify_spec_values(plan) if plan is not None and verify_specs else None
    return ReloadCheck(label, diff, run, specs)


def audit_reload(factory: Callable[[], Any], reload: Callable[[Any], Any], *,
                 cold: Callable[[], Any] | None = None,
                 reload_back: Callable[[Any], Any] | None = None,
                 specs: Iterable[Any] | None = None, refill: bool = True,
                 ignore: Sequence[str] = (), max_depth: int = 12,
                 labels: tuple[str, str] = ("A->B", "A->B->A"),
                 verify_specs: bool = False,
                 require_match: bool | Iterable[str] = False) -> OracleReport:
    """Run the oracle with callables (what the CLI does).

    ``factory()`` builds a model with weights A loaded and post-load processing done.
    ``reload(model)`` reloads it with weights B. ``cold()`` builds a fresh cold start of B
    (for the stale check; optional). ``reload_back(model)`` reloads A again; the result is
    diffed against the startup census, itself a cold start of A (optional). ``specs``: compile
    a plan on the warm model (see the module docstring). The cold model is built first and
    dropped once its census is taken; that census keeps its tensors for the ``max |diff|``.
    ``verify_specs``: see :func:`check_reload`. ``require_match``: as
    :func:`~derivgraph.planner.compile_plan`'s.
    """
    cold_census = None
    if cold is not None:
        cold_model = cold()
        cold_census = _census(cold_model, max_depth)
        del cold_model
    model = factory()
    plan = None
    if specs is not None:
        plan = compile_plan(model, list(specs), require_match=require_match)
    startup = _census(model, max_depth)
    report = OracleReport(declared=len(plan.declared()) if plan is not None else 0,
                          plan=plan is not None, refilled=plan is not None and refill,
                          folds=len(plan.folds.entries) if plan is not None else 0)
    report.checks.append(check_reload(model, reload, label=labels[0], startup=startup,
                                      cold=cold_census, plan=plan, refill=refill, ignore=ignore,
                                      max_depth=max_depth, verify_specs=verify_specs))
    if reload_back is not None:
        report.checks.append(check_reload(model, reload_back, label=labels[1], startup=startup,
                                          cold=startup, plan=plan, refill=refill, ignore=ignore,
                                          max_depth=max_depth, verify_specs=verify_specs))
    report.census_seconds = startup.seconds
    return report


def reload_oracle(factory: Callable[[W], Any], load: Callable[[Any, W], Any], weights_a: W,
                  weights_b: W, *, specs: Iterable[Any] | None = None, refill: bool = True,
                  round_trip: bool = True, ignore: Sequence[str] = (),
                  max_depth: int = 12) -> OracleReport:
    """Cold start B vs warm A -> B (and A -> B -> A): "tensors changed k/N", moved, stale.

    ``factory(weights)`` is a cold start (construct, load, post-load step); ``load(model,
    weights)`` is the engine's reload (load, then whatever post-load step it reruns). Use
    *different* weights: a same-weight reload hides stale reads.
    """
    return audit_reload(
        lambda: factory(weights_a), lambda m: load(m, weights_b),
        cold=lambda: factory(weights_b),
        reload_back=(lambda m: load(m, weights_a)) if round_trip else None,
        specs=specs, refill=refill, ignore=ignore, max_depth=max_depth)
