"""Is a traced draft equivalent to a hand-written spec? Same owners, kinds and values A->B->A.

Both spec sets are compiled on two cold starts of the same model; per module class that a
hand-written spec declares something on, the declared paths (owner + name) and their kinds
must be equal, and every declared value must be equal between the two models at A, after a
reload to B and after the reload back to A (each plan refilled after each reload).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from torch import nn

from derivgraph.errors import DerivgraphError
from derivgraph.paths import get_path
from derivgraph.planner import compile_plan
from derivgraph.trace.proof import _equal

__all__ = ["ClassComparison", "compare_specs"]


@dataclass
class ClassComparison:
    """The verdict for one module class (all its instances)."""

    module_class: str
    hand: list[str]
    traced: list[str]
    kind_mismatch: list[str] = field(default_factory=list)
    value_mismatch: list[str] = field(default_factory=list)
    error: str = ""
    spec_of: dict[str, str] = field(default_factory=dict)  # hand-declared path -> its spec

    @property
    def hand_specs(self) -> list[str]:
        """The hand-written specs declaring something on this class."""
        return sorted(set(self.spec_of.values()))

    @property
    def unreproduced_specs(self) -> list[str]:
        """Hand-written specs with a declaration missing, of another kind or another value."""
        bad = set(self.missing) | {m.split(" ", 1)[0] for m in self.kind_mismatch
                                   + self.value_mismatch}
        if self.error:
            bad |= set(self.hand)
        return sorted({self.spec_of[k] for k in bad if k in self.spec_of})

    @property
    def missing(self) -> list[str]:
        return sorted(set(self.hand) - set(self.traced))

    @property
    def extra(self) -> list[str]:
        return sorted(set(self.traced) - set(self.hand))

    @property
    def equivalent(self) -> bool:
        return not (self.error or self.missing or self.extra or self.kind_mismatch
                    or self.value_mismatch)

    def describe(self) -> str:
        if self.equivalent:
            return f"{self.module_class}: equivalent ({len(self.hand)} declared)"
        parts = [self.error] if self.error else []
        for label, items in (("missing", self.missing), ("extra", self.extra),
                             ("kind", self.kind_mismatch), ("value", self.value_mismatch)):
            if items:
                parts.append(f"{label}: {', '.join(items[:4])}"
                             + (f" (+{len(items) - 4})" if len(items) > 4 else ""))
        return f"{self.module_class}: NOT equivalent; " + "; ".join(parts)


def _kinds(plan: Any) -> dict[str, str]:
    return {row["node"]: row["kind"] for row in plan.rows()}


def _spec_names(plan: Any) -> dict[str, str]:
    return {row["node"]: row["spec"] for row in plan.rows()}


def _class_of(model: nn.Module, key: str) -> str:
    """The class of the deepest module on ``key``'s owner path."""
    parts = key.split(".")
    cls = type(model).__name__
    obj: Any = model
    for part in parts[:-1]:
        obj = get_path(obj, part)
        if isinstance(obj, nn.Module):
            cls = type(obj).__name__
        else:
            break
    return cls


def compare_specs(hand: list[Any], traced: list[Any], make: Callable[[int], nn.Module],
                  reloads: tuple[Callable[[nn.Module, int], None],
                                 Callable[[nn.Module, int], None]]) -> list[ClassComparison]:
    """Per module class: hand-written vs traced declarations on two cold starts of ``make``."""

    models = (make(0), make(0))
    try:
        plans = (compile_plan(models[0], hand), compile_plan(models[1], traced))
    except DerivgraphError as exc:
        return [ClassComparison("<model>", [], [], error=f"compile: {exc}")]
    keys = [list(p.declared()) for p in plans]
    kinds = [_kinds(p) for p in plans]
    classes = sorted({_class_of(models[0], k) for k in keys[0]})
    out = {c: ClassComparison(c, [k for k in keys[0] if _class_of(models[0], k) == c],
                              [k for k in keys[1] if _class_of(models[1], k) == c])
           for c in classes}
    names = _spec_names(plans[0])
    for cmp in out.values():
        cmp.spec_of = {k: names[k] for k in cmp.hand if k in names}
        for k in set(cmp.hand) & set(cmp.traced):
            if kinds[0].get(k) != kinds[1].get(k):
                cmp.kind_mismatch.append(f"{k} ({kinds[0].get(k)} vs {kinds[1].get(k)})")

    def check(stage: str) -> None:
        for cmp in out.values():
            for k in set(cmp.hand) & set(cmp.traced):
                if not _equal(get_path(models[0], k), get_path(models[1], k)):
                    cmp.value_mismatch.append(f"{k} at {stage}")

    check("A")
    for seed, stage in ((1, "B"), (0, "A again")):
        for model, plan, reload in zip(models, plans, reloads):
            reload(model, seed)
            plan.refill(verify=True)
        check(stage)
    return list(out.values())
