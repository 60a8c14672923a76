"""derivgraph's worker RPCs, callable through ``collective_rpc``.

Start vLLM with
``--worker-extension-cls vllm_integration.worker_extension.DerivgraphWorkerExtension``
(``LLM(..., worker_extension_cls=...)``): vLLM mixes this class into its Worker; each method
runs in every worker and returns plain data. Names start with ``derivgraph_`` so they never
collide with the Worker's own::

    llm = LLM(model, worker_extension_cls="vllm_integration.worker_extension."
                                         "DerivgraphWorkerExtension")
    llm.collective_rpc("derivgraph_summary")
    llm.collective_rpc("reload_weights", kwargs={"weights_path": path})
    llm.collective_rpc("derivgraph_counters")   # reloads, refills, tensors written, moved ...
    llm.collective_rpc("derivgraph_audit")      # census: moved / undeclared since baseline
    llm.collective_rpc("derivgraph_repeat_oracle", kwargs={"repeat": 3})  # same-weight oracle
    llm.collective_rpc("derivgraph_recompute")  # after weights written by hand
"""

from __future__ import annotations

import logging
from typing import Any

from vllm_integration import session
from vllm_integration.config import current_mode
from vllm_integration.hooks import is_installed

__all__ = ["DerivgraphWorkerExtension"]

logger = logging.getLogger(__name__)


def _name(model: Any) -> str:
    return type(model).__name__


class DerivgraphWorkerExtension:
    """derivgraph's worker RPCs (every planned model of the worker: target and drafter)."""

    def _derivgraph_models(self) -> list[Any]:
        """The worker's planned models: the target model first, then the drafter's."""
        runner = getattr(self, "model_runner", None)
        if runner is None:
            return session.planned_models()
        models = []
        try:
            models.append(runner.get_model())
        except (AttributeError, ValueError):  # no model loaded yet
            logger.debug("derivgraph: the worker has no model yet")
        drafter = getattr(getattr(runner, "drafter", None), "model", None)
        if drafter is not None:
            models.append(drafter)
        return [m for m in models if session.state_for(m) is not None]

    def derivgraph_summary(self, rows: bool = False) -> dict[str, Any]:
        """Mode and, per model, the plan: derived tensors, bytes, specs, non-refillable scalars.

        ``rows=True`` adds one row per derived tensor (node, owner, kind, shape, dtype, op).
        """
        out: dict[str, Any] = {"mode": current_mode(), "hooks_installed": is_installed(),
                               "models": []}
        for model in self._derivgraph_models():
            plan = session.plan_for(model)
            if plan is None:
                continue
            table = plan.rows()
            entry = {"model": _name(model), "derived": len(plan),
                     "adopted": sum(r["adopted"] for r in table),
                     "bytes": sum(r["bytes"] for r in table),
                     "specs": sorted({r["spec"] for r in table}),
                     "not_refillable": plan.not_refillable(), "steps": len(plan.steps)}
            if rows:
                entry["rows"] = table
            out["models"].append(entry)
        return out

    def derivgraph_counters(self) -> dict[str, Any]:
        """Each model's session counters (reloads, refills, tensors written, moved)."""
        out: dict[str, Any] = {"mode": current_mode(), "models": []}
        for model in self._derivgraph_models():
            state = session.state_for(model)
            if state is not None:
                out["models"].append({"model": _name(model), **state.counters.as_dict()})
        return out

    def derivgraph_audit(self, rebaseline: bool = False, limit: int = 20) -> dict[str, Any]:
        """A census of every reachable tensor against the baseline: moved and undeclared.

        The baseline is taken before the model's first reload (or by the first audit call, or
        when ``rebaseline`` is set): it is what captured graphs read.
        """
        out: dict[str, Any] = {"mode": current_mode(), "models": []}
        for model in self._derivgraph_models():
            result, fresh = session.audit(model, rebaseline=rebaseline)
            plan = session.plan_for(model)
            out["models"].append({"model": _name(model), "baseline_taken_now": fresh,
                                  "declared": len(plan) if plan is not None else 0,
                                  **result.as_dict(limit)})
        return out

    def derivgraph_refill(self) -> dict[str, Any]:
        """Refill every plan now (after a reload path the hooks do not see); returns reports."""
        out: dict[str, Any] = {"models": []}
        for model in self._derivgraph_models():
            plan = session.plan_for(model)
            if plan is not None and len(plan):
                report = plan.refill(verify=True)
                logger.info("derivgraph: manual refill of %s: %s", _name(model), report)
                out["models"].append({"model": _name(model), **report.as_dict()})
        return out

    def derivgraph_repeat_oracle(self, repeat: int = 3, limit: int = 20,
                                 reload_kwargs: dict[str, Any] | None = None) -> dict[str, Any]:
        """Same-weight oracle: ``reload_weights(**reload_kwargs)`` ``repeat`` times (default: the
        served checkpoint), every tensor fingerprinted against the census taken before."""
        model = self.model_runner.get_model()
        return session.same_weight_oracle(
            model, lambda: self.reload_weights(**(reload_kwargs or {})), repeat=repeat,
            limit=limit)
    def derivgraph_recompute(self, names: list[str] | None = None) -> dict[str, Any]:
        """Recompute the derived tensors fed by ``names`` (runtime paths; None: all of them).

        For weights written by hand (``collective_rpc`` callables copying into parameters,
        ``LLM.apply_model``): no vLLM reload path ran, so nothing was hooked. Runs as a reload
        session (strict mode audits it; the counters count it).
        """
        out: dict[str, Any] = {"models": []}
        for model in self._derivgraph_models():
            session.begin(model, "rpc-recompute")
            if names:
                session.note_names(model, names, runtime=True)
            report = session.end(model)
            if report is not None:
                out["models"].append({"model": _name(model), **report.as_dict()})
        return out
