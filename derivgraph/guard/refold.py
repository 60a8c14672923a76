"""Double-fold detection: the engine folded a freshly loaded weight that a fold spec also folds.

A ``kind: fold`` spec assumes the engine folds only on the first load (its own fold is spent).
An engine that folds on every load would, with the spec, fold twice. The witness is the value
the loader handed over: :class:`LoadWitness` keeps a copy of each fold source as it is loaded
(the plugin passes the weights iterator through :meth:`LoadWitness.record`). Before the pass,
:func:`check_refolds` compares each witnessed source with the weight after the engine's step:

* equal to the loaded value: the engine did not fold; the declared fold applies (the contract);
* equal to the fold of the loaded value: the engine folded already. ``strict`` raises
  :class:`~derivgraph.errors.FoldReappliedError` (DG083); otherwise a WARNING on the ``vllm``
  logger names it, and the pass is told the source is already folded (it is skipped, so the
  weight is folded once);
* anything else (the loader transformed it): no verdict.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Iterator
from typing import Any

import torch

from derivgraph.compare import bits_equal
from derivgraph.errors import FoldReappliedError, Rule, SpecIssue
from derivgraph.paths import get_path

__all__ = ["LoadWitness", "check_refolds", "engine_refolds"]

loud = logging.getLogger("vllm.derivgraph")


def _matches(fold_id: str, name: str) -> bool:
    return fold_id == name or fold_id.endswith("." + name) or name.endswith("." + fold_id)


class LoadWitness:
    """Copies of fold sources as the loader handed them over (only fold sources are kept)."""

    def __init__(self, plan: Any) -> None:
        folds = getattr(plan, "folds", None)
        self.ids = list(folds.entries) if folds is not None else []
        self.loaded: dict[str, torch.Tensor] = {}

    def note(self, name: str, tensor: Any) -> None:
        """Record ``tensor`` if ``name`` is a fold source (checkpoint or model path)."""
        if not isinstance(tensor, torch.Tensor):
            return
        for fold_id in self.ids:
            if _matches(fold_id, name):
                self.loaded[fold_id] = tensor.detach().clone()

    def record(self, weights: Iterable[tuple[str, Any]]) -> Iterator[tuple[str, Any]]:
        """Pass ``(name, tensor)`` pairs through, recording fold sources."""
        for name, tensor in weights:
            if self.ids:
                self.note(name, tensor)
            yield name, tensor

    def clear(self) -> None:
        self.loaded.clear()


def _close(a: torch.Tensor, b: torch.Tensor) -> bool:
    """Equal up to the rounding of an engine that folds in another order or precision."""
    if bits_equal(a, b):
        return True
    if not (a.is_floating_point() and b.is_floating_point()) or a.shape != b.shape:
        return False
    return torch.allclose(a.double(), b.double(), rtol=1e-5, atol=0.0)


def engine_refolds(plan: Any, witness: LoadWitness) -> list[SpecIssue]:
    """One issue per witnessed fold source the engine already folded (reads only)."""
    issues = []
    with torch.no_grad():
        for fold_id, loaded in witness.loaded.items():
            entry = plan.folds.entries.get(fold_id)
            source = get_path(plan.model, fold_id)
            if entry is None or not isinstance(source, torch.Tensor):
                continue
            loaded = loaded.to(source.device)
            if loaded.shape != source.shape or bits_equal(source, loaded):
                continue
            once = entry.compute(loaded)
            if _close(source, once) and not bits_equal(once, loaded):
                issues.append(SpecIssue(
                    Rule.ENGINE_REFOLDED,
                    f"the engine already folded the freshly loaded {fold_id}, which "
                    f"{entry.spec_name!r} folds too: the weight would be folded twice",
                    "the engine folds on every load: drop the fold spec for this engine (or "
                    "narrow its `where` to engines whose own fold is spent after the first "
                    "load)", entry.decl.location, fold_id))
    return issues


def check_refolds(plan: Any, witness: LoadWitness, *, strict: bool = False) -> list[str]:
    """Detect engine refolds before a pass (see the module docstring); returns their ids.

    ``strict`` raises before anything is written. Otherwise each is warned about on the
    ``vllm`` logger and marked folded, so the pass skips it. The witness is cleared.
    """
    issues = engine_refolds(plan, witness)
    witness.clear()
    if not issues:
        return []
    if strict:
        raise FoldReappliedError(issues)
    for issue in issues:
        entry = plan.folds.entries[issue.node]
        entry.folded.copy_(get_path(plan.model, issue.node))  # the engine's fold stands
        loud.warning("derivgraph: %s: %s (the declared fold is skipped)", issue.rule,
                     issue.message)
    return [i.node for i in issues]
