"""Parameters a model's own loader fills around their ``weight_loader``, through vLLM's real
layerwise reload on CPU: the static audit's loader-bypass errors are observed stale; the same
parameter loaded through its weight_loader is refilled (the canary: the case observes the
bypass, not the harness)."""

from __future__ import annotations

import dataclasses

import pytest

vllm = pytest.importorskip("vllm")
pytestmark = [pytest.mark.vllm, pytest.mark.slow]

from vllm_integration.executable_audit import Observed, Verdict, run_audit  # noqa: E402
from vllm_integration.loader_cases import loader_cases  # noqa: E402

CASES = {c.name: c for c in loader_cases()}


def _rows(audit) -> dict[tuple[str, str, str], tuple[Observed, Verdict | None]]:
    return {(r.case, r.cls, r.attr): (r.observed, r.verdict) for r in audit.rows if r.static}


def test_each_loader_bypass_is_observed_stale_after_a_layerwise_reload():
    audit = run_audit(list(CASES.values()))
    stale = (Observed.STALE, Verdict.CONFIRMED)
    assert _rows(audit) == {
        ("inkling-amd-sink-experts", "InklingSinkExperts", "w13_weight"): stale,
        ("inkling-amd-sink-experts", "InklingSinkExperts", "w2_weight"): stale,
        ("inkling-nvidia-sink-experts", "InklingSinkExperts", "w13_weight"): stale,
        ("inkling-nvidia-sink-experts", "InklingSinkExperts", "w2_weight"): stale,
        ("longcat-ngram-projection", "NgramEmbedding", "oe_projection"): stale,
    }
    assert set(audit.cases.values()) == {"ran"}


def test_canary_through_its_weight_loader_the_same_parameter_is_refilled():
    case = CASES["inkling-amd-sink-experts"]
    through_loader = dataclasses.replace(case, load=None,
                                         shapes={"w13_weight": case.shapes["w13_weight"]})
    audit = run_audit([through_loader])
    row = _rows(audit)[("inkling-amd-sink-experts", "InklingSinkExperts", "w13_weight")]
    assert row == (Observed.FRESH, Verdict.REFUTED)
