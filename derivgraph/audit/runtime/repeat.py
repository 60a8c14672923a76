"""The same-weight oracle: reload the *same* weights N times, fingerprint everything each time.

The design notes' end-to-end check ("tensors changed 0/3011" for Muse Spark NVFP4): a reload of
the weights a model already holds must change nothing a captured graph reads. After each of N
reloads, every reachable tensor (parameters, buffers, declared and undeclared derived tensors,
wherever held) and every Python float is compared with a reference census: a cold start of the
same weights when one is given, else the model's own startup census. Per reload the table has

* **tensors changed k/T** — startup tensors at a new address, gone, or with another value;
* **at new addresses** — a path now holds another object, address or layout;
* **values differing** — tensor values that differ from the reference;
* **Python scalars changed** — floats that differ from the reference.

What it catches that one A->B reload cannot: folds and other in-place transforms applied once
per post-load run instead of once per load (a second application changes a weight although the
weights did not change), buffers that drift, holders rebuilt at new addresses. What it cannot
catch: a derived tensor never refreshed (same weights: its old value is right) — use
``audit runtime --cold`` with different weights for that.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from derivgraph.audit.runtime.census import Census, take_census
from derivgraph.audit.runtime.declared import DeclaredSet
from derivgraph.audit.runtime.diff import CensusDiff, DiffCategory, diff_censuses
from derivgraph.audit.table import text_table
from derivgraph.planner import compile_plan

__all__ = ["RepeatReport", "RepeatRound", "repeat_oracle", "same_weight_rounds"]

logger = logging.getLogger(__name__)


@dataclass
class RepeatRound:
    """One same-weight reload compared with the reference."""

    index: int
    tensors: int
    changed: int
    new_addresses: int
    values_differing: int
    scalars_changed: int
    diff: CensusDiff

    def as_json(self, limit: int | None = None) -> dict[str, Any]:
        return {"reload": self.index, "tensors": self.tensors, "changed": self.changed,
                "new_addresses": self.new_addresses, "values_differing": self.values_differing,
                "scalars_changed": self.scalars_changed,
                "findings": [f.as_json() for f in self.diff.findings[:limit]]}


@dataclass
class RepeatReport:
    """Every round of one same-weight oracle run; ``ok()`` when no round changed anything."""

    reference: str  # "cold start" or "startup census"
    rounds: list[RepeatRound] = field(default_factory=list)

    def ok(self) -> bool:
        return all(r.changed == 0 and r.scalars_changed == 0 for r in self.rounds)

    def changed_paths(self) -> list[str]:
        """Paths with any finding in any round (deduplicated, in order)."""
        out: list[str] = []
        for r in self.rounds:
            out += [f.path for f in r.diff.findings if f.category is not DiffCategory.NEW
                    and f.path not in out]
        return out

    def as_json(self, limit: int | None = None) -> dict[str, Any]:
        last = self.rounds[-1] if self.rounds else None
        return {"ok": self.ok(), "repeat": len(self.rounds), "reference": self.reference,
                "tensors": last.tensors if last else 0,
                "changed_max": max((r.changed for r in self.rounds), default=0),
                "changed_paths": self.changed_paths(),
                "rounds": [r.as_json(limit) for r in self.rounds]}

    def render(self, limit: int = 30, strict: bool = True) -> str:
        """The design notes' table, then the findings of the last round that had any; the
        verdict is FAIL only with ``strict`` (else FINDINGS: a report)."""
        lines = [f"same-weight oracle: {len(self.rounds)} reload(s) of the same weights, "
                 f"every reachable tensor against the {self.reference}"]
        lines += text_table(
            ("reload", "tensors changed", "at new addresses", "values differing",
             "Python scalars changed"),
            [(r.index, f"{r.changed}/{r.tensors}", r.new_addresses, r.values_differing,
              r.scalars_changed) for r in self.rounds],
            align="<>>>>", widths=(7, 16, 17, 17, 23), sep=" ", rule=None)
        bad = [r for r in self.rounds if r.diff.findings]
        if bad:
            findings = bad[-1].diff.findings
            lines.append(f"findings after reload {bad[-1].index}:")
            lines += ["  " + f.line() for f in findings[:limit]]
            if len(findings) > limit:
                lines.append(f"  ... and {len(findings) - limit} more (--format json lists all)")
        verdict = "PASS" if self.ok() else "FAIL" if strict else "FINDINGS"
        lines.append(verdict + f": {len(self.changed_paths())} "
                     "path(s) changed by reloading the same weights")
        return "\n".join(lines)


def _round(index: int, startup: Census, after: Census, reference: Census,
           declared: DeclaredSet | None, ignore: Sequence[str]) -> RepeatRound:
    diff = diff_censuses(startup, after, reference, declared=declared, ignore=ignore)
    scalars = tensors_differing = 0
    for f in diff.findings:
        entry = after.get(f.path) or startup.get(f.path)
        is_scalar = entry is not None and not entry.is_tensor
        if f.category in (DiffCategory.STALE, DiffCategory.RECAPTURE) and is_scalar:
            scalars += 1
        elif f.category is DiffCategory.STALE:
            tensors_differing += 1
    return RepeatRound(index, diff.tensors, diff.changed, len(diff.moved),
                       tensors_differing, scalars, diff)


def same_weight_rounds(model: Any, reload: Callable[[], Any], *, repeat: int = 3,
                       reference: Census | None = None, startup: Census | None = None,
                       after_reload: Callable[[], Any] | None = None,
                       declared: Callable[[], DeclaredSet | None] = lambda: None,
                       ignore: Sequence[str] = (), max_depth: int = 12) -> RepeatReport:
    """Reload ``model`` ``repeat`` times with ``reload()`` (the same weights each time).

    ``startup``: the census captured graphs read (default: taken now). ``reference``: a census
    of a cold start of the same weights (default: ``startup``). ``after_reload()`` runs after
    each reload (a plan's refill). Reads only, besides calling ``reload``.
    """
    if repeat < 1:
        raise ValueError(f"repeat must be at least 1, got {repeat}")
    if startup is None:
        startup = take_census(model, max_depth=max_depth)
    report = RepeatReport("cold start" if reference is not None else "startup census")
    ref = reference if reference is not None else startup
    for i in range(1, repeat + 1):
        reload()
        if after_reload is not None:
            after_reload()
        after = take_census(model, max_depth=max_depth)
        report.rounds.append(_round(i, startup, after, ref, declared(), ignore))
        logger.info("same-weight reload %d/%d: %s", i, repeat, report.rounds[-1].diff.summary())
    return report


def repeat_oracle(factory: Callable[[], Any], reload: Callable[[Any], Any], *,
                  cold: Callable[[], Any] | None = None, repeat: int = 3,
                  specs: Iterable[Any] | None = None, refill: bool = True,
                  ignore: Sequence[str] = (), max_depth: int = 12,
                  require_match: bool | Iterable[str] = False) -> RepeatReport:
    """The CLI's ``--repeat``: ``factory()`` loads weights A, ``reload(model)`` reloads A.

    ``cold()``: a cold start of A, built first and compared against (default: the startup
    census). ``specs``: compile a plan on the warm model, refill it after each reload and
    classify findings as declared.
    """
    reference = None
    if cold is not None:
        cold_model = cold()
        reference = take_census(cold_model, max_depth=max_depth)
        del cold_model
    model = factory()
    plan = None
    if specs is not None:
        plan = compile_plan(model, list(specs), require_match=require_match)
    after = (lambda: plan.refill(verify=True)) if plan is not None and refill else None
    return same_weight_rounds(
        model, lambda: reload(model), repeat=repeat, reference=reference, after_reload=after,
        declared=(lambda: DeclaredSet.from_plan(plan)) if plan is not None else (lambda: None),
        ignore=ignore, max_depth=max_depth)
