"""Trace, render, validate and prove in one call (what the CLI and the tests use)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from torch import nn

from derivgraph.errors import SpecValidationError
from derivgraph.spec.check import check_specs as validate_specs
from derivgraph.spec.load import load_spec_text
from derivgraph.trace.draft import Draft, has_alternative, revise_entries
from derivgraph.trace.proof import CheckpointReload, ProofReport, prove
from derivgraph.trace.tracer import trace_build, trace_step
from derivgraph.trace.yaml_writer import render_yaml

__all__ = ["TraceOutcome", "trace_builder", "trace_model"]


@dataclass
class TraceOutcome:
    """A draft, its YAML and the oracle's verdict (``proof.ok``)."""

    draft: Draft
    yaml: str
    proof: ProofReport
    specs: list[Any]


def _check(draft: Draft, origin: str) -> tuple[str, list[Any], ProofReport | None]:
    text = render_yaml(draft, origin)
    try:
        specs = load_spec_text(text, file=f"<trace of {origin}>")
    except SpecValidationError as exc:
        return text, [], ProofReport(False, error=f"draft does not load: {exc}")
    issues = validate_specs(specs)
    if issues:
        return text, specs, ProofReport(False, error=str(SpecValidationError(issues)))
    if not specs:
        return text, specs, ProofReport(False, error="the step stored nothing a spec declares")
    return text, specs, None


def trace_model(factory: Callable[[], nn.Module], post_load: Callable[[nn.Module], Any],
                origin: str = "a model") -> TraceOutcome:
    """Trace ``post_load`` on ``factory()`` (loaded, not yet post-processed) and prove it."""
    model = factory()
    draft = trace_step(model, post_load)
    text, specs, failed = _check(draft, origin)
    if failed is not None:
        return TraceOutcome(draft, text, failed, specs)
    weights = CheckpointReload(factory, post_load)

    def on_declared(keys: set[str]) -> None:
        weights.declared = keys

    return _prove_pruning(draft, origin, text, specs,
                          lambda sp: prove(sp, weights.make, weights.reload, on_declared))


def trace_builder(build: Callable[[int], nn.Module], reload: Callable[[nn.Module, int], None],
                  origin: str = "a builder", label: str = "") -> TraceOutcome:
    """Trace a whole ``build(seed)`` (create, load, post-load) and prove with ``reload``.
    ``label`` goes into every spec name (``traced-LABEL-case-layer``), so the drafts of
    several builders can live in one folder."""
    _, draft = trace_build(lambda: build(0))
    if label:
        for spec in draft.specs:
            spec.name = spec.name.replace("traced-", f"traced-{label}-", 1)
    text, specs, failed = _check(draft, origin)
    if failed is not None:
        return TraceOutcome(draft, text, failed, specs)
    return _prove_pruning(draft, origin, text, specs, lambda sp: prove(sp, build, reload))


_NOT_FOLLOWED = ("its value after a reload differs from the traced formula's: it reads a value "
                 "the recording cannot see (.tolist(), a host copy) or config state")


def _refuted(proof: ProofReport) -> dict[str, str]:
    """Declared paths the oracle refuted or could not prove, with why."""
    bad = {k: _NOT_FOLLOWED for s in proof.stages for k in s["mismatched"]}
    bad.update(proof.rejected)
    return bad


def _prove_pruning(draft: Draft, origin: str, text: str, specs: list[Any],
                   run: Callable[[list[Any]], ProofReport]) -> TraceOutcome:
    """Prove; entries the oracle refutes take their alternative formula (a constant for a
    value that matched a source) or are dropped (and listed), unproven entries with an
    alternative take it, and the rest is re-proven. What stays unproven is noted."""
    for _ in range(4):
        proof = run(specs)
        bad = _refuted(proof)
        switch = {k: v for k, v in proof.unproven.items() if has_alternative(draft, k)}
        if proof.error or not (bad or switch):
            break
        draft = revise_entries(draft, bad, switch)
        text, specs, failed = _check(draft, origin)
        if failed is not None:
            return TraceOutcome(draft, text, failed, specs)
    if proof.unproven and not proof.error:
        draft.notes.extend(f"unproven: {k}: {why}" for k, why in sorted(proof.unproven.items()))
        text = render_yaml(draft, origin)
    return TraceOutcome(draft, text, proof, specs)
