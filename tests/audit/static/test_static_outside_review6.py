"""The fifth outside review's precision sample agrees: seed published first, totals, quotes.

The precision sample on the frozen rules 116053a (static_precision_outside4_vllm_0.33.json) must
carry its published seed and size (static_precision_seed_outside4.json, committed before the
draw), verdicts that add up to its totals and Wilson intervals (the published figure, the
weight-derived figure and the figure without the kernel-format clause), and reader quotes that
are the installed vLLM 0.33.0 source.
"""

from __future__ import annotations

import copy

from tests.audit.static.test_static_outside_review import (
    _load,
    _wilson,
)
from tests.audit.static.test_static_outside_review4 import (
    check_goes_red,
    check_reader_quotes,
    precision_problems,
)

PRECISION = "static_precision_outside4_vllm_0.33.json"
PRECISION_SEED = "static_precision_seed_outside4.json"


def clause_problems(review: dict) -> list[str]:
    """What is wrong with the figure without the kernel-format clause (empty when consistent)."""
    items, t = review["items"], review["totals"]
    if not all(isinstance(r["kernel_format_clause_only"], bool) for r in items):
        return ["an item lacks kernel_format_clause_only"]
    if any(r["kernel_format_clause_only"] and r["judgement"] != "TP" for r in items):
        return ["an FP is marked as resting on the kernel-format clause"]
    tpc = sum(r["judgement"] == "TP" and not r["kernel_format_clause_only"] for r in items)
    if (t["tp_without_kernel_format_clause"], t["wilson95_without_kernel_format_clause"]) != (
            tpc, _wilson(tpc, len(items))):
        return ["the figure without the kernel-format clause does not follow from the items"]
    return []


def test_precision4_uses_the_published_seed_and_adds_up():
    review = _load(PRECISION)
    assert precision_problems(review, _load(PRECISION_SEED)) == []
    assert clause_problems(review) == []
    assert review["population"] == 130 and review["rules_commit"] == "116053a"
    t = review["totals"]
    assert (t["tp"], t["fp"], t["tp_weight_derived"]) == (38, 2, 37)
    assert (t["tp_without_kernel_format_clause"], t["close_calls"]) == (27, 18)
    assert t["wilson95"] == [0.835, 0.9862]


def test_precision4_check_goes_red_on_a_flipped_verdict_or_another_seed():
    review = _load(PRECISION)
    check_goes_red(review, _load(PRECISION_SEED))
    unclaused = copy.deepcopy(review)
    next(r for r in unclaused["items"] if r["kernel_format_clause_only"])[
        "kernel_format_clause_only"] = False
    assert clause_problems(unclaused)


def test_precision4_reader_quotes_are_the_installed_source():
    check_reader_quotes(PRECISION, 1)
