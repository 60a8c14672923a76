"""Prove a draft before it is written: validate it, then an A->B->A reload oracle.

``prove(text, make, reload)``: the draft must load and validate; ``compile_plan`` on a model
built with weights A must adopt every tensor the engine made (bit-exact against the
formulas); then for B and back to A the model is reloaded (the engine's post-load step reruns),
``plan.refill(verify=True)`` must move nothing, every declared value must equal a cold start of
the same weights bit for bit, and ``plan.run(verify=True)`` (the formulas alone) must give the
same values again. Weights B are a deterministic perturbation of every checkpoint tensor
(:class:`CheckpointReload`), or the seeds of a builder that loads its own.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import torch
from torch import nn

from derivgraph.errors import DerivgraphError
from derivgraph.paths import get_path
from derivgraph.planner import compile_plan

__all__ = ["CheckpointReload", "ProofReport", "perturb", "prove"]

logger = logging.getLogger(__name__)


def perturb(t: torch.Tensor, gen: torch.Generator) -> torch.Tensor:
    """A different value of the same dtype and shape, deterministic in ``gen``: every element
    changes (zeros too, and values a narrow dtype would round back), so nothing that reads a
    source can keep its value A->B and pass as a constant."""
    if t.dtype == torch.bool or t.numel() == 0:
        return t.clone()
    if t.is_floating_point():
        base = t.detach().float().cpu()
        sign = torch.where(torch.rand(t.shape, generator=gen) < 0.5, -1.0, 1.0)
        factor = 1.0 + sign * (0.15 + 0.1 * torch.rand(t.shape, generator=gen))
        out = (base * factor).to(t.dtype)
        for bump in (1.5, 2.0, 4.0):  # zeros, and steps a narrow dtype rounded away
            same = out.float() == base
            if not bool(same.any()):
                break
            out = torch.where(same, (base * bump + 0.0625).to(t.dtype), out)
        return out.to(t.device)
    info = torch.iinfo(t.dtype)
    span = info.max - info.min + 1
    step = torch.randint(1, 4, t.shape, generator=gen, dtype=torch.int64)
    shifted = (t.detach().cpu().to(torch.int64) - info.min + step) % span + info.min
    return shifted.to(t.dtype).to(t.device)


def _registered(model: nn.Module) -> dict[str, tuple[nn.Module, str, torch.Tensor]]:
    out = {}
    for prefix, module in model.named_modules():
        for registry in (module._parameters, module._buffers):
            for name, t in registry.items():
                if isinstance(t, torch.Tensor):
                    out[f"{prefix}.{name}" if prefix else name] = (module, name, t)
    return out


class CheckpointReload:
    """Weights and reloads for ``FACTORY`` (a loaded model before its post-load step) and
    ``post_load(model)``: the checkpoint is every parameter and buffer of a fresh model; seed
    0 is it unchanged, other seeds perturb every tensor. A reload copies the checkpoint into
    the model (re-registering tensors the post-load step replaced in another layout), reruns
    the post-load step, and copies replaced parameters and buffers back into the objects the
    model held (what vLLM's layerwise reload does for them), except the declared ones."""

    def __init__(self, factory: Callable[[], nn.Module], post_load: Callable[[nn.Module], Any]):
        self.factory, self.post_load = factory, post_load
        fresh = factory()
        self.checkpoint = {p: t.detach().clone() for p, (_, _, t) in _registered(fresh).items()}
        self.declared: set[str] = set()

    def weights(self, seed: int) -> dict[str, torch.Tensor]:
        if seed == 0:
            return self.checkpoint
        gen = torch.Generator().manual_seed(seed)
        return {k: perturb(v, gen) for k, v in self.checkpoint.items()}

    def _load(self, model: nn.Module, weights: dict[str, torch.Tensor]) -> None:
        now = _registered(model)
        with torch.no_grad():
            for path, value in weights.items():
                if path in now and now[path][2].shape == value.shape \
                        and now[path][2].dtype == value.dtype:
                    now[path][2].copy_(value)
                    continue
                prefix, _, name = path.rpartition(".")
                owner = get_path(model, prefix) if prefix else model
                if name in owner._buffers:
                    owner._buffers[name] = value.clone()
                else:
                    owner._parameters[name] = nn.Parameter(value.clone(), requires_grad=False)

    def make(self, seed: int) -> nn.Module:
        """A cold start: a fresh model, weights of ``seed``, the post-load step."""
        model = self.factory()
        self._load(model, self.weights(seed))
        self.post_load(model)
        return model

    def reload(self, model: nn.Module, seed: int) -> None:
        kept = _registered(model)
        self._load(model, self.weights(seed))
        self.post_load(model)
        now = _registered(model)
        with torch.no_grad():
            for path, (module, name, old) in kept.items():
                if path in self.declared or path not in now:
                    continue
                new = now[path][2]
                if new is not old and new.shape == old.shape and new.dtype == old.dtype:
                    old.copy_(new)
                    registry = module._parameters if name in module._parameters else \
                        module._buffers
                    registry[name] = old


@dataclass
class ProofReport:
    """The oracle's verdict. ``changed``: declared values that differ between A and B;
    ``rejected``: declared paths the oracle refutes without a reload (a constant whose cold
    starts differ), with why; ``unproven``: declared paths it cannot tell right from wrong
    because the sources they read (or, for a constant, some source) kept their value A->B (a
    builder that does not load them), with why; ``unperturbed``: those sources."""

    ok: bool
    declared: int = 0
    changed: int = 0
    stages: list[dict[str, Any]] = field(default_factory=list)
    error: str = ""
    rejected: dict[str, str] = field(default_factory=dict)
    unproven: dict[str, str] = field(default_factory=dict)
    unperturbed: list[str] = field(default_factory=list)

    def summary(self) -> str:
        if self.error:
            return f"proof FAILED: {self.error}"
        parts = [f"{s['stage']}: moved {len(s['moved'])}, mismatched {len(s['mismatched'])}"
                 for s in self.stages]
        if self.rejected:
            parts.append(f"rejected {len(self.rejected)}: {', '.join(sorted(self.rejected))}")
        if self.unproven:
            parts.append(f"{len(self.unproven)} unproven (sources unchanged A->B)")
        verdict = "proof ok" if self.ok else "proof FAILED"
        return (f"{verdict}: {self.declared} declared, {self.changed}/{self.declared} change "
                f"A->B; " + "; ".join(parts))


#: why :func:`prove` rejects a declaration before any reload
VARYING_CONSTANT = ("its formula reads no source, yet cold starts of weights A and B differ: it "
                    "depends on a source through a value the recording cannot see (.tolist(), a "
                    "host copy)")
UNPROVEN = ("every source it reads ({}) kept its value from A to B, so the oracle cannot tell "
            "it follows them")
UNPROVEN_CONSTANT = ("a constant, but sources of the plan ({}) kept their value from A to B, so "
                     "the oracle cannot tell it reads none of them")


def _equal(a: Any, b: Any) -> bool:
    if isinstance(a, torch.Tensor) or isinstance(b, torch.Tensor):
        return (isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor)
                and a.shape == b.shape and a.dtype == b.dtype and torch.equal(a.cpu(), b.cpu()))
    return a == b


def mismatched(keys: list[str], model: Any, cold: Any) -> list[str]:
    """Declared paths whose value differs between ``model`` and ``cold``."""
    return [k for k in keys if not _equal(get_path(model, k), get_path(cold, k))]


def prove(specs: list[Any], make: Callable[[int], nn.Module],
          reload: Callable[[nn.Module, int], None],
          on_declared: Callable[[set[str]], None] | None = None) -> ProofReport:
    """Compile ``specs`` on ``make(0)``, reload seed 1 then 0, compare with cold starts."""

    model = make(0)
    try:
        plan = compile_plan(model, specs, require_match=True)
    except DerivgraphError as exc:
        return ProofReport(False, error=f"compile: {exc}")
    keys = list(plan.declared())
    if on_declared is not None:
        on_declared(set(keys))
    cold = {0: make(0), 1: make(1)}
    report = ProofReport(True, declared=len(keys),
                         changed=len(mismatched(keys, cold[0], cold[1])))
    _check_perturbed(plan, keys, cold, report)
    for seed, label in ((1, "A->B"), (0, "B->A")):
        reload(model, seed)
        refill = plan.refill(verify=True)
        bad = mismatched(keys, model, cold[seed])
        report.stages.append({"stage": f"{label} refill", "moved": list(refill.moved),
                              "mismatched": bad})
        reload(model, seed)  # again, so the formulas alone must give the values (no refill)
        run = plan.run(verify=True)
        if any(n in plan.constant_values for n in plan.constant_entries):
            plan.rewrite_constants()  # constants too: the engine may refill them in place
        bad_run = mismatched(keys, model, cold[seed])
        report.stages.append({"stage": f"{label} recompute", "moved": list(run.moved),
                              "mismatched": bad_run})
    report.ok = not report.rejected and all(not s["moved"] and not s["mismatched"]
                                            for s in report.stages)
    return report


def _check_perturbed(plan: Any, keys: list[str], cold: dict[int, nn.Module],
                     report: ProofReport) -> None:
    """Reject a constant whose cold starts differ; a declaration whose every source (or, for a
    constant, some source of the plan) kept its value A->B is unproven."""
    deps = plan.graph.source_deps()
    sources = plan.graph.sources()
    report.unperturbed = [s for s in sources
                          if _equal(get_path(cold[0], s), get_path(cold[1], s))]
    still = set(report.unperturbed)
    for key in keys:
        reads = deps.get(key, frozenset())
        if not reads:
            if not _equal(get_path(cold[0], key), get_path(cold[1], key)):
                report.rejected[key] = VARYING_CONSTANT
            elif still:
                report.unproven[key] = UNPROVEN_CONSTANT.format(", ".join(sorted(still)[:3]))
        elif reads <= still:
            report.unproven[key] = UNPROVEN.format(", ".join(sorted(reads)[:3]))
