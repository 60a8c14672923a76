"""The plugin's safety net: per-spec isolation at compile, the guard and the double-fold check
around every reload (see :mod:`derivgraph.guard` and :mod:`derivgraph.isolation`).

* Compile: every spec that compiles goes into the model's one plan; a spec that fails to bind
  or compile is dropped with a loud error naming the spec, its classes and the rule
  (``strict`` refuses the load instead).
* Guard (on unless ``DERIVGRAPH_GUARD=0``): after the first post-load step every reachable tensor
  no spec declares is snapshotted; after each completed reload a slot the engine rebound (same
  shape, dtype, strides) gets its new value copied into the startup storage and its holders
  re-pointed. What cannot be restored in place is "graph recapture required": a WARNING on the
  ``vllm`` logger, a :class:`~derivgraph.errors.RecaptureRequired` in ``strict`` mode.
* Double folds: fold sources are witnessed as the loader hands them over; an engine that
  folded a freshly loaded source itself is caught before the pass folds it again (``strict``
  raises, otherwise a warning and the declared fold is skipped).
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from derivgraph.guard import Guard, GuardReport
from derivgraph.guard.refold import LoadWitness, check_refolds
from vllm_integration.config import env_flag

if TYPE_CHECKING:
    from torch import nn

    from derivgraph import Plan

__all__ = ["GUARD_ENV", "check_folds", "guard_enabled", "restore_guard", "start_guard",
           "start_witness"]

logger = logging.getLogger(__name__)
vllm_logger = logging.getLogger("vllm.derivgraph")

#: ``0`` turns the guard off (default: on in every mode but ``off``).
GUARD_ENV = "DERIVGRAPH_GUARD"


def guard_enabled() -> bool:
    """``DERIVGRAPH_GUARD`` is not 0 / false / no / off."""
    return env_flag(GUARD_ENV) is not False


def start_guard(model: nn.Module, plan: Plan) -> Guard | None:
    """Snapshot ``model`` for the guard (every tensor ``plan`` does not declare)."""
    if not guard_enabled():
        return None
    guard = Guard()
    report = guard.snapshot(model, declared=plan.declared_storages())
    logger.info("derivgraph: %s guard: %d undeclared tensor(s) kept at their startup storage "
                "(%.3f s)", type(model).__name__, len(report.guarded), report.seconds)
    return guard


def start_witness(plan: Plan) -> LoadWitness | None:
    """A loaded-value witness when ``plan`` declares folds, else None."""
    folds = getattr(plan, "folds", None)
    return LoadWitness(plan) if folds is not None and len(folds) else None


def check_folds(plan: Plan, witness: LoadWitness | None, mode: str) -> list[str]:
    """Before a pass: the fold sources the engine folded itself (strict raises)."""
    if witness is None or not witness.loaded:
        return []
    return check_refolds(plan, witness, strict=mode == "strict")


def restore_guard(model: Any, guard: Guard | None, plan: Plan, mode: str,
                  kind: str, storage_kept: bool = False) -> GuardReport | None:
    """After a reload's pass: bring rebound slots back (strict raises on a recapture).
    ``storage_kept``: the pass's own address check proved the guard's startup tensors too
    (:meth:`Guard.restore`)."""
    if guard is None:
        return None
    # the plan's tensors are read only if something changed
    report = guard.restore(model, strict=mode == "strict", declared=plan.declared_storages,
                           storage_kept=storage_kept)
    if report.restored or report.copied_only:
        logger.info("derivgraph: %s %s reload: %s", type(model).__name__, kind, report)
    if report.recapture:
        vllm_logger.warning(
            "derivgraph: the %s reload of %s changed %d graph-visible tensor slot(s) the guard "
            "cannot restore in place: graph recapture required: %s", kind,
            type(model).__name__, len(report.recapture),
            "; ".join(c.describe() for c in report.recapture[:8]))
    return report
