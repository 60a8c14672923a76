"""Per-model derivgraph sessions inside vLLM: each model's plan, its reloads in progress, and
what the reload checks saw.

vLLM's hooks (see :mod:`vllm_integration.hooks`) report three things here:

* :func:`on_post_load` — the initial post-load step finished: compile the plan, adopting the
  tensors vLLM made (a model no spec matches gets an empty plan and costs nothing);
* :func:`begin` / :func:`end` — a reload scope opened or closed (``reload_weights``, a
  weight-transfer session, a layerwise initialize/finalize pair, a patch call). Scopes nest;
  when the outermost one closes the session completes: after a layerwise reload the plan
  *refills* (engine values into the startup storage, holders re-bound; ``recompute`` mode
  recomputes from the formulas instead), after an in-place update (kernel-format reload,
  sparse patches) it *recomputes* what depends on the names that were loaded;
* :func:`note_names` — names a loader reported.

``strict`` mode records the model before the reload and checks it after the refill
(:mod:`derivgraph.audit.runtime.reload_watch`), and raises :class:`derivgraph.StrictReloadError`
if any graph-visible tensor moved, an undeclared derived tensor appeared, a tensor was left stale
in place (its value unchanged although every loaded tensor of its module changed: the heuristic
of :mod:`derivgraph.audit.runtime.freshness`), a declared derived tensor differs from a fresh
evaluation of its spec (:mod:`derivgraph.audit.runtime.spec_values`;
``DERIVGRAPH_VERIFY_SPECS=1`` runs this check in the other modes too, as a WARNING on the
``vllm`` logger), or a Python scalar changed (unless recapture is allowed).

A changed Python scalar (a declared one the plan rewrote, or in strict mode any float the
census sees) is logged as a WARNING on the ``vllm.derivgraph`` logger, a child of the ``vllm``
logger vLLM configures, so it shows by default: a captured graph baked the old number and only
a recapture makes it current. ``DERIVGRAPH_ALLOW_RECAPTURE=1`` says the deployment recaptures
(or runs eager) after reloads: strict mode then lets scalar changes pass (still warned).
"""

from __future__ import annotations

import logging
import threading
import time
import types
import weakref
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from derivgraph import DerivgraphError, compile_plan
from derivgraph.audit.runtime.declared import DeclaredSet
from derivgraph.audit.runtime.reload_watch import watch
from derivgraph.audit.runtime.repeat import same_weight_rounds
from derivgraph.isolation import compile_isolated
from vllm_integration.completion import (
    ALLOW_RECAPTURE_ENV,
    VERIFY_SPECS_ENV,
    Counters,
    complete,
    recapture_allowed,
    strict_findings,
    verify_specs_enabled,
)
from vllm_integration.config import current_mode, spec_library, specs_for
from vllm_integration.guarding import start_guard, start_witness
from vllm_integration.snapshot import AuditResult, Snapshot, compare, snapshot

if TYPE_CHECKING:
    from torch import nn

    from derivgraph import Plan, RunReport, Spec
    from derivgraph.audit.runtime.reload_watch import ReloadWatch

__all__ = [
    "ALLOW_RECAPTURE_ENV", "VERIFY_SPECS_ENV", "Counters", "ModelState", "abort", "attach",
    "audit", "begin", "detach", "end", "note_names", "on_post_load", "plan_for", "planned_models",
    "recapture_allowed", "recording", "replan", "same_weight_oracle", "state_for",
    "strict_findings", "verify_specs_enabled", "witness", "witness_note",
]

logger = logging.getLogger(__name__)

_ATTR = "_derivgraph_state"
_MODELS: weakref.WeakSet[Any] = weakref.WeakSet()
_LOCK = threading.RLock()


@dataclass(slots=True)
class Session:
    """One reload in progress: nested scopes, what happened, what was loaded (made on every
    reload: slots, no per-instance dict)."""

    kind: str
    depth: int = 0
    layerwise: bool = False
    layerwise_open: bool = False
    names: set[str] = field(default_factory=set)
    runtime_names: set[str] = field(default_factory=set)
    before: Snapshot | None = None
    watch: ReloadWatch | None = None
    recording: bool = False  # an outer scope records every loaded weight (see recording())


@dataclass
class ModelState:
    """One model's session: its compiled plan and the record of its reloads (census snapshots
    in ``baseline``)."""

    plan: Plan
    counters: Counters = field(default_factory=Counters)
    session: Session | None = None
    baseline: Snapshot | None = None
    tensor_paths: frozenset[str] | None = None
    guard: Any = None  # derivgraph.guard.Guard: every tensor the plan does not declare
    witness: Any = None  # derivgraph.guard.refold.LoadWitness: loaded values of fold sources
    dropped: list[Any] = field(default_factory=list)  # isolation.DroppedSpec, one per spec

    def loadable(self, model: nn.Module) -> frozenset[str]:
        if self.tensor_paths is None:
            names = {n for n, _ in model.named_parameters(remove_duplicate=False)}
            names |= {n for n, _ in model.named_buffers(remove_duplicate=False)}
            self.tensor_paths = frozenset(names)
        return self.tensor_paths


# ---- plans ------------------------------------------------------------------------------------

def state_for(model: Any) -> ModelState | None:
    """The derivgraph state of ``model``, or None if it has no plan."""
    holder = getattr(model, "__dict__", {}).get(_ATTR)
    return getattr(holder, "state", None)


def _store(model: Any, state: ModelState | None) -> None:
    # The state lives on the model, so it dies with it (a global dict of model -> state would
    # keep every model alive through state.plan.model). It sits in a module-type namespace:
    # censuses never walk into modules, so derivgraph's bookkeeping is not graph-visible.
    if state is None:
        model.__dict__.pop(_ATTR, None)
        _MODELS.discard(model)
        return
    holder = types.ModuleType("derivgraph.vllm_state")
    holder.state = state
    model.__dict__[_ATTR] = holder
    _MODELS.add(model)


def plan_for(model: Any) -> Plan | None:
    """The plan compiled for ``model``, or None."""
    state = state_for(model)
    return state.plan if state is not None else None


def planned_models() -> list[Any]:
    """Every live model in this process that has a plan."""
    with _LOCK:
        return list(_MODELS)


def attach(model: nn.Module, specs: Iterable[Spec] | None = None, *,
           prepare: Callable[[nn.Module], None] | None = None) -> Plan:
    """Compile ``model``'s plan (default: the plugin's spec library) and track its reloads.

    The hooks do this after vLLM's initial post-load step; call it by hand for a model loaded
    before the plugin was installed. Returns the existing plan if there is one. A spec that
    fails to compile is dropped loudly (``strict`` raises); the guard keeps its tensors.
    ``prepare``: called with the model once its plan is stored and before the guard's
    snapshot (the plugin installs its own attributes there, so no reload sees them as new).
    """
    with _LOCK:
        state = state_for(model)
        if state is not None:
            return state.plan
        library = spec_library() if specs is None else list(specs)
        start = time.perf_counter()
        plan, dropped = compile_isolated(model, specs_for(model, library),
                                         strict=current_mode() == "strict")
        state = ModelState(plan, dropped=dropped, witness=start_witness(plan))
        _store(model, state)
        if prepare is not None:
            prepare(model)
        state.guard = start_guard(model, plan)
    logger.info("derivgraph: %s plan compiled in %.3f s: %d derived tensors from %d specs",
                type(model).__name__, time.perf_counter() - start, len(plan),
                len(plan.entries.spec_names()))
    return plan


def detach(model: nn.Module) -> None:
    """Forget ``model``'s plan; its reloads are no longer tracked."""
    with _LOCK:
        _store(model, None)


def replan(model: nn.Module, specs: Iterable[Spec] | None = None) -> Plan:
    """Recompile ``model``'s plan over the tensors it holds now, keeping its counters.

    For engine objects built after the post-load step (Kimi-K3's specialized decode): the
    tensors the old plan bound are adopted, so nothing moves. A spec problem raises and keeps
    the previous plan.
    """
    with _LOCK:
        old = state_for(model)
        library = spec_library() if specs is None else list(specs)
        plan = compile_plan(model, specs_for(model, library))
        _store(model, ModelState(plan, counters=old.counters if old is not None else Counters(),
                                 guard=start_guard(model, plan), witness=start_witness(plan)))
    return plan


def on_post_load(model: nn.Module, *, prepare: Callable[[nn.Module], None] | None = None) \
        -> None:
    """vLLM's post-load step finished on ``model``: compile its plan, or refill an existing one.

    A spec problem fails the load in ``strict`` mode; otherwise the specs that compile make
    the plan, and if none can be singled out the model gets an empty plan: the guard alone.
    ``prepare``: see :func:`attach` (a first load only).
    """
    mode = current_mode()
    if mode == "off":
        return
    state = state_for(model)
    if state is not None:  # the post-load step reran on a planned model: keep our storage
        with _LOCK:
            _complete(model, state, Session("post-load", layerwise=True), mode)
        return
    try:
        attach(model, prepare=prepare)
    except DerivgraphError as exc:
        if mode == "strict":
            raise
        logger.error("derivgraph: no plan for %s, only the guard keeps its derived tensors "
                     "across reloads:\n%s", type(model).__name__, exc)
        attach(model, specs=[], prepare=prepare)


# ---- reload sessions --------------------------------------------------------------------------

def begin(model: Any, kind: str, *, layerwise: bool = False, restart: bool = False,
          records: bool = False) -> None:
    """Open a reload scope on ``model`` (no-op for models without a plan).

    ``layerwise``: this scope is vLLM's initialize_layerwise_reload (closed by finalize).
    ``restart``: drop a session left open by a failed update (a weight-transfer start).
    ``records``: this scope records every weight its reload loads (see :func:`recording`).
    """
    state = state_for(model)
    if state is None:
        return
    with _LOCK:
        session = state.session
        if session is not None and (restart or (layerwise and session.layerwise_open)):
            logger.warning("derivgraph: %s: dropping an unfinished %s reload session",
                           type(model).__name__, session.kind)
            session = state.session = None
        if session is None:  # the outermost scope: the mode decides the baseline
            mode = current_mode()
            session = state.session = Session(kind)
            if mode == "strict":
                session.watch = watch(model)
                session.before = Snapshot(session.watch.slots)
            if state.baseline is None and (mode == "strict" or len(state.plan) > 0):
                state.baseline = session.before or snapshot(model)
        session.depth += 1
        session.recording |= records
        if layerwise:
            session.layerwise = session.layerwise_open = True


def recording(model: Any) -> bool:
    """Whether ``model``'s open reload session records the names and fold sources of the
    weights it loads already (a ``reload_weights`` in checkpoint format): a loader called inside
    it passes the weights through as they are."""
    state = state_for(model)
    return state is not None and state.session is not None and state.session.recording


def note_names(model: Any, names: Iterable[str], *, runtime: bool) -> None:
    """Record loaded names: runtime (model) paths, or checkpoint names (maybe fused later)."""
    state = state_for(model)
    if state is None or state.session is None:
        return
    with _LOCK:
        (state.session.runtime_names if runtime else state.session.names).update(names)


def witness(model: Any, name: str, tensor: Any) -> None:
    """A loader handed ``tensor`` over for ``name``: kept if it is a fold source."""
    state = state_for(model)
    if state is not None and state.witness is not None:
        state.witness.note(name, tensor)


def witness_note(model: Any) -> Callable[[str, Any], None] | None:
    """What :func:`witness` calls for ``model`` (None when it keeps no fold source): a loader
    wrapper resolves it once per load instead of once per weight."""
    state = state_for(model)
    return state.witness.note if state is not None and state.witness is not None else None


def abort(model: Any) -> None:
    """A reload failed: drop its session without touching any tensor."""
    state = state_for(model)
    if state is not None:
        with _LOCK:
            state.session = None


def end(model: Any, *, layerwise: bool = False) -> RunReport | None:
    """Close a reload scope; when the outermost closes, refill or recompute (see module doc)."""
    state = state_for(model)
    if state is None or state.session is None:
        return None
    with _LOCK:
        session = state.session
        if layerwise:
            if not session.layerwise_open:
                return None  # a finalize without our initialize: not a reload we saw begin
            session.layerwise_open = False
        session.depth -= 1
        if session.depth > 0:
            return None
        state.session = None
        return _complete(model, state, session, current_mode())


def _complete(model: Any, state: ModelState, session: Session, mode: str) -> RunReport | None:
    return complete(model, state, session, mode, lambda: _updated(state, model, session))


def _updated(state: ModelState, model: Any, session: Session) -> list[str] | None:
    """The dirty sources for an in-place update, or None for "recompute everything"."""
    names = session.runtime_names or session.names
    if not names:
        return None
    known = state.loadable(model)
    if any(n not in known for n in names):  # checkpoint names vLLM fuses or renames
        return None
    return sorted(names)


# ---- runtime audit ----------------------------------------------------------------------------

def audit(model: Any, *, rebaseline: bool = False) -> tuple[AuditResult, bool]:
    """Census ``model`` against its baseline (taken before its first reload, or now).

    Returns the result and whether the baseline was (re)taken by this call.
    """
    state = state_for(model)
    if state is None:
        return AuditResult(), False
    with _LOCK:
        if rebaseline or state.baseline is None:
            state.baseline = snapshot(model)
            return AuditResult(tensors=len(state.baseline)), True
        return compare(state.baseline, model, state.plan.declared_storages()), False


# ---- the same-weight oracle (a worker RPC) ---------------------------------------------------

def same_weight_oracle(model: Any, reload: Any, *, repeat: int = 3, limit: int = 20,
                       ignore: Iterable[str] = ()) -> dict[str, Any]:
    """Reload the same weights ``repeat`` times with ``reload()`` and fingerprint everything.

    The reference is ``model``'s census now (run it on a freshly started engine, or right after
    a reload of the weights ``reload`` loads): every reachable tensor and Python float is
    compared with it after each reload (:mod:`derivgraph.audit.runtime.repeat`). The plugin's hooks
    refill the plan inside ``reload`` as usual. Returns plain data (the worker RPC's answer):
    ``ok``, ``tensors``, per-reload ``rounds`` (changed, new_addresses, values_differing,
    scalars_changed, the first ``limit`` findings) and ``changed_paths``.
    """

    plan = plan_for(model)
    declared = (lambda: DeclaredSet.from_plan(plan)) if plan is not None else (lambda: None)
    report = same_weight_rounds(model, reload, repeat=repeat, declared=declared,
                                ignore=list(ignore))
    logger.info("derivgraph: same-weight oracle on %s:\n%s", type(model).__name__,
                report.render(limit))
    return {"model": type(model).__name__, **report.as_json(limit)}
