"""What happens when a model's outermost reload scope closes (see :mod:`vllm_integration.session`):
the plan refills or recomputes, the guard restores, the checks of the mode run, and the
session's counters record it.

The common reload (``refill`` mode, nothing moved, nothing new) pays for the plan's pass and the
guard's restore only: the switches are read once per reload, the findings are assembled only
when a check found something, and the record of the last reload (:attr:`Counters.last`) keeps
this reload's reports and is turned into plain data when read.
"""

from __future__ import annotations

import copy
import logging
import time
from dataclasses import dataclass, field, fields
from typing import TYPE_CHECKING, Any

from derivgraph import StrictReloadError
from derivgraph.audit.runtime.spec_values import verify_spec_values
from vllm_integration.config import env_flag
from vllm_integration.guarding import check_folds, restore_guard
from vllm_integration.snapshot import AuditResult, compare

if TYPE_CHECKING:
    from derivgraph import Plan, RunReport
    from derivgraph.addresses import AtAddresses
    from derivgraph.audit.runtime.reload_watch import WatchResult
    from derivgraph.audit.runtime.spec_values import SpecValueCheck
    from derivgraph.guard import GuardReport

__all__ = ["ALLOW_RECAPTURE_ENV", "VERIFY_SPECS_ENV", "Counters", "LastReload", "complete",
           "recapture_allowed", "strict_findings", "verify_specs_enabled"]

logger = logging.getLogger("vllm_integration.session")
#: vLLM configures the ``vllm`` logger (handler, level INFO): its children show by default.
vllm_logger = logging.getLogger("vllm.derivgraph")

#: Set to 1 when the deployment recaptures graphs (or runs eager) after a reload.
ALLOW_RECAPTURE_ENV = "DERIVGRAPH_ALLOW_RECAPTURE"
#: 1: compare declared tensors with their specs after every reload in any mode (a WARNING on
#: the ``vllm`` logger outside strict mode); 0: never. Default: on in strict mode only.
VERIFY_SPECS_ENV = "DERIVGRAPH_VERIFY_SPECS"

_SCALAR = "scalar changed: "


def recapture_allowed() -> bool:
    """``DERIVGRAPH_ALLOW_RECAPTURE`` is set to 1 / true / yes / on."""
    return env_flag(ALLOW_RECAPTURE_ENV) is True


def verify_specs_enabled(mode: str) -> bool:
    """Whether a reload in ``mode`` runs the spec-value check (see :data:`VERIFY_SPECS_ENV`)."""
    flag = env_flag(VERIFY_SPECS_ENV)
    return mode == "strict" if flag is None else flag


class LastReload:
    """This reload's reports, turned into the plain-data record of :attr:`Counters.last` when
    first read (the reports are this reload's own objects: nothing later writes them)."""

    __slots__ = ("_parts", "_data")

    def __init__(self, kind: str, mode: str, layerwise: bool, names: int,
                 report: RunReport | None, found: WatchResult | None,
                 specs: SpecValueCheck | None, guarded: GuardReport | None):
        self._parts = (kind, mode, layerwise, names, report, found, specs, guarded)
        self._data: dict[str, Any] | None = None

    def data(self) -> dict[str, Any]:
        if self._data is None:
            kind, mode, layerwise, names, report, found, specs, guarded = self._parts
            self._data = {"session": kind, "mode": mode, "layerwise": layerwise,
                          "loaded_names": names,
                          "report": report.as_dict() if report else None,
                          "strict": found.as_dict() if found is not None else None,
                          "spec_values": specs.as_dict() if specs is not None else None,
                          "guard": guarded.as_dict() if guarded is not None else None}
        return self._data


@dataclass
class Counters:
    """What one model's session recorded since its plan was compiled; ``last`` describes the
    last completed reload (plain data, built when read)."""

    reloads: int = 0
    layerwise: int = 0
    in_place: int = 0
    refills: int = 0
    recomputes: int = 0
    tensors_written: int = 0
    bytes_written: int = 0
    rebinds: int = 0
    moved_last: int = 0
    undeclared_last: int = 0
    unrefreshed_last: int = 0
    scalars_changed_last: int = 0
    spec_mismatches_last: int = 0
    strict_failures: int = 0
    guard_restored_last: int = 0
    guard_recapture_last: int = 0
    seconds_last: float = 0.0
    _last: LastReload | dict[str, Any] | None = field(default=None, repr=False)

    @property
    def last(self) -> dict[str, Any] | None:
        """The last completed reload: session kind, mode, loaded names and every report."""
        last = self._last
        return last.data() if isinstance(last, LastReload) else last

    @last.setter
    def last(self, value: LastReload | dict[str, Any] | None) -> None:
        self._last = value

    def as_dict(self) -> dict[str, Any]:
        out = {f.name: getattr(self, f.name) for f in fields(self) if f.name != "_last"}
        out["last"] = copy.deepcopy(self.last)
        return out


def _run_plan(plan: Plan, layerwise: bool, mode: str, updated: Any,
              after: AtAddresses | None) -> RunReport | None:
    """Refill or recompute ``plan``; its last address check takes ``after`` too."""
    folds = getattr(plan, "folds", None)
    if not len(plan) and (folds is None or not len(folds)):  # a plan of folds only runs too
        return None
    if layerwise:
        return plan.refill(verify=True, after=after) if mode != "recompute" \
            else plan.run(verify=True, after=after)
    return plan.run(updated(), verify=True, after=after)


def complete(model: Any, state: Any, session: Any, mode: str, updated: Any) -> RunReport | None:
    """The outermost scope of ``session`` closed: refill or recompute ``state.plan``, restore the
    guard, run the checks of ``mode`` (``strict`` raises) and record it in ``state.counters``.
    ``updated()``: the dirty sources of an in-place update (None: every one)."""
    if mode == "off":
        return None
    plan, counters, guard = state.plan, state.counters, state.guard
    start = time.perf_counter()
    check_folds(plan, state.witness, mode)  # an engine that folds every load: strict raises
    holders = getattr(plan, "holders", None)
    # the pass's last address check takes the guard's tensors too
    report = _run_plan(plan, session.layerwise, mode, updated,
                       guard.addresses if guard is not None else None)
    if report is not None:
        if report.mode == "refill":
            counters.refills += 1
        else:
            counters.recomputes += 1
        counters.tensors_written += report.written
        counters.bytes_written += report.bytes
        counters.rebinds += report.rebinds
    counters.reloads += 1
    if session.layerwise:
        counters.layerwise += 1
    else:
        counters.in_place += 1
    # proven by the pass's check (nothing between it and the guard re-points a tensor: the
    # bookkeeping above, and the guard's survey reads only)
    kept = report is not None and holders is not None and holders.after_checked is report
    guarded = restore_guard(model, guard, plan, mode, session.kind, kept)
    if guarded is None:
        counters.guard_restored_last = counters.guard_recapture_last = 0
    else:
        counters.guard_restored_last = len(guarded.restored)
        counters.guard_recapture_last = len(guarded.recapture)
    moved = report.moved if report is not None and report.moved else _NONE
    found = None
    if session.watch is None and session.before is None:  # refill / recompute: no census
        result = _CLEAN if not moved else AuditResult(list(moved))
    else:
        result = _census(model, plan, session, moved)
        found = result.found
    specs = verify_spec_values(plan) if verify_specs_enabled(mode) and len(plan) else None
    findings = strict_findings(result, found, report, specs) \
        if _anything(result, found, report, specs) else _NONE
    counters.moved_last, counters.undeclared_last = len(result.moved), len(result.undeclared)
    counters.unrefreshed_last = len(found.unrefreshed) if found is not None else 0
    counters.scalars_changed_last = sum(p.startswith(_SCALAR) for p in findings) \
        if findings else 0
    counters.spec_mismatches_last = len(specs.mismatches) if specs is not None else 0
    counters.seconds_last = time.perf_counter() - start
    counters._last = LastReload(session.kind, mode, session.layerwise,  # the setter's store
                                len(session.runtime_names or session.names), report, found,
                                specs, guarded)
    if report is not None and logger.isEnabledFor(logging.INFO):  # one call when it is not
        logger.info("derivgraph: %s %s reload: %s", type(model).__name__, session.kind, report)
    if findings or (specs is not None and specs.mismatches):
        _tell(model, session.kind, mode, findings, result, specs, counters)
    if result.moved:
        logger.warning("derivgraph: %s: %d tensor path(s) moved in the %s reload: %s",
                       type(model).__name__, len(result.moved), session.kind,
                       ", ".join(result.moved[:8]))
    return report


#: the result of a reload no census watched and nothing moved in (read only)
_CLEAN = AuditResult()
_NONE: list[str] = []  # read only


class _Census(AuditResult):
    """An audit result with the strict watch's own findings (None: the legacy snapshot)."""

    found: WatchResult | None = None


def _census(model: Any, plan: Plan, session: Any, moved: list[str]) -> _Census:
    """Strict mode's watch (or the legacy snapshot) after the pass, merged with ``moved``."""
    result = _Census(list(moved))
    if session.watch is not None:
        found = result.found = session.watch.check(model, plan.declared_storages())
        result.moved = sorted(set(result.moved) | set(found.moved))
        result.undeclared, result.tensors = found.undeclared, found.tensors
    else:
        legacy = compare(session.before, model, plan.declared_storages())
        result.moved = sorted(set(result.moved) | set(legacy.moved))
        result.undeclared, result.tensors = legacy.undeclared, legacy.tensors
    return result


def _anything(result: AuditResult, found: WatchResult | None, report: RunReport | None,
              specs: SpecValueCheck | None) -> bool:
    """Whether :func:`strict_findings` can find anything (each of its inputs is empty else)."""
    return bool(result.moved or result.undeclared or found is not None
                or (specs is not None and specs.mismatches)
                or (report is not None and report.recapture_required))


def _tell(model: Any, kind: str, mode: str, findings: list[str], result: AuditResult,
          specs: SpecValueCheck | None, counters: Counters) -> None:
    """Warn about changed scalars and spec mismatches; in strict mode raise on the findings."""
    name = type(model).__name__
    scalars = [p.removeprefix(_SCALAR) for p in findings if p.startswith(_SCALAR)]
    allowed = recapture_allowed() if scalars else False
    if scalars:
        vllm_logger.warning(
            "derivgraph: the %s reload of %s changed %d Python scalar(s) a captured graph baked "
            "at capture time: %s. Recapture CUDA graphs (or run eager) after this reload%s.",
            kind, name, len(scalars), ", ".join(scalars[:8]),
            "" if allowed else f"; set {ALLOW_RECAPTURE_ENV}=1 once the deployment does")
    if specs is not None and specs.mismatches and mode != "strict":
        vllm_logger.warning(
            "derivgraph: after the %s reload of %s, %d declared derived tensor(s) differ from "
            "what their spec computes: %s", kind, name, len(specs.mismatches),
            "; ".join(m.reason() for m in specs.mismatches[:4]))
    failing = [p for p in findings if not (p.startswith(_SCALAR) and allowed)]
    if mode == "strict" and failing:
        counters.strict_failures += 1
        raise StrictReloadError(
            f"derivgraph strict mode: the {kind} reload of {name} left "
            f"{len(result.moved)} graph-visible tensor path(s) moved, "
            f"{len(result.undeclared)} undeclared derived tensor(s), "
            f"{counters.unrefreshed_last} tensor(s) stale in place, "
            f"{counters.spec_mismatches_last} declared tensor(s) differing from their spec and "
            f"{counters.scalars_changed_last} changed Python scalar(s); a captured graph would "
            "read stale or freed memory or a baked number. Declare them in a spec "
            f"(DERIVGRAPH_SPECS), fix the post-load step, or for scalars set "
            f"{ALLOW_RECAPTURE_ENV}=1 if graphs are recaptured.", failing)


def strict_findings(result: AuditResult, found: WatchResult | None,
                    report: RunReport | None, specs: SpecValueCheck | None = None) -> list[str]:
    """What strict mode fails on, one ``"<what>: <path>"`` line each.

    ``moved``, ``undeclared``, ``stale in place`` (with the heuristic's reason), ``spec value
    differs`` (a declared tensor against a fresh evaluation of its spec, naming the spec) and
    ``scalar changed`` (declared scalars the plan rewrote, and any float the watch saw change).
    Called by :func:`complete`; exposed so the hooks or a test can ask the same question.
    """
    lines = [*(f"moved: {p}" for p in result.moved),
             *(f"undeclared: {p}" for p in result.undeclared)]
    if found is not None:
        lines += [f"stale in place: {u.path} ({u.reason()})" for u in found.unrefreshed]
    if specs is not None:
        lines += [f"spec value differs: {m.path} ({m.reason()})" for m in specs.mismatches]
    scalars: list[str] = list(report.recapture_required) if report is not None else []
    if found is not None:
        scalars += [f"{c.path} ({c.before!r} -> {c.after!r})" for c in found.scalars
                    if not any(c.path == s or c.path.endswith("." + s) for s in scalars)]
    lines += [f"{_SCALAR}{s}" for s in dict.fromkeys(scalars)]
    return lines
