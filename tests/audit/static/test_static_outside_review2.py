"""The second outside review's files are self-consistent: seeds published first, totals, quotes.

The precision sample (static_precision_outside2_vllm_0.33.json) must carry the published seed
and size, verdicts that add up to its totals and Wilson intervals (both figures), and reader
quotes that are the installed vLLM 0.33.0 source. The v3 recall list must carry its published
seed, a verdict for every candidate, and a result file counting exactly its real sites.
"""

from __future__ import annotations

import pytest

from tests.audit.static.test_static_outside_review import (
    _load,
    _vllm_parent,
    _wilson,
    quote_matches,
)

PRECISION = "static_precision_outside2_vllm_0.33.json"
RECALL = "static_recall_outside_v3_vllm_0.33.json"
RESULT = "static_recall_outside_result_v3_vllm_0.33.json"


def precision_totals(items: list[dict]) -> dict:
    """The totals a list of judged items implies (both figures, Wilson 95 %)."""
    n = len(items)
    tp = sum(r["judgement"] == "TP" for r in items)
    tpw = sum(r["judgement"] == "TP" and r["weight_derived"] for r in items)
    return {"tp": tp, "fp": n - tp, "tp_weight_derived": tpw,
            "wilson95": _wilson(tp, n), "wilson95_weight_derived": _wilson(tpw, n)}


def test_precision2_uses_the_published_seed_and_adds_up():
    review = _load(PRECISION)
    seed = _load("static_precision_seed_outside2.json")
    assert review["seed"] == seed["seed"] and review["n"] == seed["n"] == len(review["items"])
    items = review["items"]
    assert [r["index"] for r in items] == list(range(len(items)))
    assert all(r["judgement"] in {"TP", "FP"} and r["why"] and isinstance(r["weight_derived"], bool)
               for r in items)
    t = review["totals"]
    assert {k: t[k] for k in precision_totals(items)} == precision_totals(items)
    assert t["close_calls"] == sum(r["close_call"] for r in items)


def test_precision2_totals_go_red_on_a_flipped_verdict():
    items = [dict(r) for r in _load(PRECISION)["items"]]
    before = precision_totals(items)
    items[0]["judgement"] = "FP" if items[0]["judgement"] == "TP" else "TP"
    assert precision_totals(items) != before


def test_precision2_reader_quotes_are_the_installed_source():
    root = _vllm_parent()
    if root is None:
        pytest.skip("vLLM is not installed")
    review = _load(PRECISION)
    bad = [r["reader_quote"] for r in review["items"] if not quote_matches(r["reader_quote"], root)]
    assert bad == []


def test_recall_v3_uses_the_published_seed_and_is_judged():
    lists = _load(RECALL)
    seed = _load("static_recall_outside_seed_v3.json")
    assert lists["seed"] == seed["seed"] and lists["n"] == seed["n"] and lists["tensor_only"]
    for body in lists["lists"].values():
        assert len(body["candidates"]) == min(seed["n"], body["population"])
        assert all(isinstance(c["real"], bool) and c["why"] for c in body["candidates"])
        assert body["real"] == sum(c["real"] for c in body["candidates"])
        assert not any(c["real"] and c["host_scalar"] for c in body["candidates"])


def test_recall_v3_holds_no_earlier_candidate():
    earlier = set()
    for stage in ("v1", "v2"):
        for body in _load(f"static_recall_outside_{stage}_vllm_0.33.json")["lists"].values():
            earlier |= {(c["file"], c["line"], c["attr"]) for c in body["candidates"]}
    v3 = {(c["file"], c["line"], c["attr"])
          for body in _load(RECALL)["lists"].values() for c in body["candidates"]}
    assert v3 and not v3 & earlier


def test_recall_v3_result_counts_exactly_the_real_sites():
    result = _load(RESULT)
    real = {name: {(c["file"], c["line"], c["attr"]) for c in body["candidates"] if c["real"]}
            for name, body in _load(RECALL)["lists"].items()}
    assert {n for n, sites in real.items() if sites} == set(result["lists"])
    for name, body in result["lists"].items():
        assert {(s["file"], s["line"], s["attr"]) for s in body["sites"]} == real[name]
        assert body["found"] == sum(s["found"] for s in body["sites"])
        assert body["real"] == len(body["sites"])
        assert body["wilson95"] == _wilson(body["found"], body["real"])
    assert result["all"]["found"] == sum(b["found"] for b in result["lists"].values())
    assert result["all"]["real"] == sum(len(s) for s in real.values())
