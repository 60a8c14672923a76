"""After a reload: does every declared derived tensor hold what its spec computes?

:func:`verify_spec_values` evaluates the plan's formulas afresh from the live sources, with
the one interpreter (:class:`derivgraph.compiler.interpret.EagerInterpreter`, subclassed here so
that a
failing op or a missing source marks its node instead of raising), and compares each declared
tensor's live value with it: equal within the spec's ``tolerance`` (``0``: every element
equal, NaN matching NaN, the rule compile-time adoption applies). It reads only: no tensor is
written, and the fresh values are dropped when it returns.

What it catches that the address and freshness checks cannot: a declared tensor that code
overwrote after the reload pass (a hook running later, a kernel writing into it), an engine
post-load step that now computes something else than the spec says (a refill keeps the
engine's values), a pass that did not run.

What cannot be recomputed, and is listed as such rather than judged:

* ``kind: engine`` without a formula: only the engine's code computes it (with a registered
  op as formula it is recomputed like any other);
* ``kind: scalar``: a Python number, checked by the scalar watch instead (a change needs a
  graph recapture, whatever the value);
* a tensor whose formula could not be evaluated (a source gone, an op failing): the reason
  is given.

``kind: fold`` sources are compared with the value their fold wrote at the last pass (the
value before the fold is gone, so the fold itself cannot be replayed).

Cost: one eager evaluation of every formula (about one reload pass, op by op) and one
comparison per declared tensor (``torch.equal``, then an exact float64 difference only where
it is not equal).
"""

from __future__ import annotations

import enum
import time
from dataclasses import dataclass, field
from typing import Any

import torch

from derivgraph.compare import max_difference
from derivgraph.compiler.interpret import EagerInterpreter, Failed, has_failed
from derivgraph.compiler.ir import Node
from derivgraph.errors import Rule
from derivgraph.ops import OpDef
from derivgraph.paths import MISSING, get_path
from derivgraph.spec.kinds import TensorKind, is_engine

__all__ = ["NotRecomputed", "SpecMismatch", "SpecValueCheck", "verify_spec_values"]


class NotRecomputed(enum.Enum):
    """Why a declared tensor's value was not compared with its spec."""

    ENGINE = "engine-computed: only the engine's code computes it (no formula to replay)"
    SCALAR = "a Python scalar: the scalar watch reports its changes instead"
    FAILED = "its formula could not be evaluated"
    MISSING = "nothing is held at its path (the address check reports it)"


@dataclass(frozen=True)
class SpecMismatch:
    """A declared tensor whose live value differs from what its spec computes now."""

    path: str
    spec: str
    formula: str
    tolerance: float
    worst: float  # largest |live - formula| (inf for a shape or dtype mismatch)
    location: str
    fold: bool = False

    def reason(self) -> str:
        what = "the value its fold wrote at the last pass" if self.fold else \
            f"its formula {self.formula!r}"
        bound = "exactly" if self.tolerance == 0 else f"within tolerance {self.tolerance:g}"
        return (f"{Rule.SPEC_VALUE}: {self.path} (spec {self.spec!r}, {self.location}) differs "
                f"from {what} (max |diff| {self.worst:.3g}, must agree {bound}): something "
                "wrote it after the reload pass, or the engine computes it differently than "
                "the spec says")


@dataclass
class SpecValueCheck:
    """What :func:`verify_spec_values` found."""

    checked: int = 0
    mismatches: list[SpecMismatch] = field(default_factory=list)
    not_recomputed: dict[str, str] = field(default_factory=dict)  # path -> why
    seconds: float = 0.0

    def ok(self) -> bool:
        return not self.mismatches

    def as_dict(self) -> dict[str, Any]:
        return {"checked": self.checked,
                "mismatches": [{"path": m.path, "spec": m.spec, "worst": m.worst,
                                "reason": m.reason()} for m in self.mismatches],
                "not_recomputed": dict(self.not_recomputed), "seconds": round(self.seconds, 4)}


class _FreshValues(EagerInterpreter):
    """Every node's value from the live sources; a failure marks the node (:class:`Failed`)
    instead of raising, and an engine tensor without a formula reads the engine's tensor."""

    def source(self, node: Node) -> Any:
        value = get_path(self.graph.model, node.id)
        return Failed(KeyError(f"source {node.id} is gone")) if value is MISSING else value

    def call(self, node: Node, op: OpDef, args: Any, kwargs: dict[str, Any]) -> Any:
        if has_failed(args) or has_failed(kwargs):
            return Failed()
        try:
            return op.fn(*args, **kwargs)
        except (RuntimeError, TypeError, ValueError, IndexError, AttributeError,
                NotImplementedError, KeyError) as exc:
            return Failed(exc)


def _worst(live: torch.Tensor, fresh: torch.Tensor) -> float:
    """Largest |live - fresh| (:func:`~derivgraph.compare.max_difference`); ``inf`` where the
    dtypes differ."""
    return float("inf") if live.dtype != fresh.dtype else max_difference(live, fresh)


def verify_spec_values(plan: Any) -> SpecValueCheck:
    """Compare every declared derived tensor of ``plan`` with a fresh evaluation of its spec.

    Reads only (see the module docstring for what is and is not recomputed).
    """
    start = time.perf_counter()
    result = SpecValueCheck()
    graph = plan.graph
    interp = _FreshValues(graph)
    for node_id, node in graph.derived.items():
        if node.input is None and is_engine(node.decl):  # the engine's own tensor, read live
            interp.env[node_id] = get_path(plan.model, node_id)
    with torch.no_grad():
        values = interp.run()
        for path, entry in plan.entries.items():
            node = entry.node
            if node.kind is TensorKind.SCALAR:
                result.not_recomputed[path] = NotRecomputed.SCALAR.value
                continue
            if node.input is None and is_engine(node.decl):
                result.not_recomputed[path] = NotRecomputed.ENGINE.value
                continue
            fresh = values.get(path)
            if isinstance(fresh, Failed) or not isinstance(fresh, torch.Tensor):
                error = fresh.error if isinstance(fresh, Failed) else None
                result.not_recomputed[path] = NotRecomputed.FAILED.value + (
                    f" ({type(error).__name__}: {error})" if error is not None else "")
                continue
            live = get_path(plan.model, path)
            if not isinstance(live, torch.Tensor):
                result.not_recomputed[path] = NotRecomputed.MISSING.value
                continue
            result.checked += 1
            worst = _worst(live, fresh)
            if worst > node.decl.tolerance:
                result.mismatches.append(SpecMismatch(
                    path, node.bound.spec.name, node.decl.formula or "", node.decl.tolerance,
                    worst, str(node.decl.location)))
        for path, fold in plan.folds.entries.items():
            live = get_path(plan.model, path)
            if not isinstance(live, torch.Tensor):
                result.not_recomputed[path] = NotRecomputed.MISSING.value
                continue
            result.checked += 1
            worst = _worst(live, fold.folded)
            if worst > 0:  # the fold wrote exactly this value
                result.mismatches.append(SpecMismatch(
                    path, fold.spec_name, fold.decl.formula or "", 0.0, worst,
                    str(fold.decl.location), fold=True))
    result.mismatches.sort(key=lambda m: m.path)
    result.seconds = time.perf_counter() - start
    return result
