"""The fourth outside review's files agree: seeds published first, totals, quotes.

The v5 recall list (static_recall_outside_v5_vllm_0.33.json) must carry its published seed, the
v5 pools' sizes, a verdict with quotes for every candidate, no candidate of an earlier list, and
quotes that are the installed vLLM 0.33.0 source (one of them the candidate's own store). The
precision sample on the final rules (static_precision_outside3_vllm_0.33.json) must carry its
published seed and size, verdicts that add up to its totals and Wilson intervals, and reader
quotes that are the installed source.
"""

from __future__ import annotations

import copy

import pytest

from tests.audit.static.test_static_outside_review import _load, _vllm_parent, quote_matches
from tests.audit.static.test_static_outside_review2 import precision_totals
from tests.audit.static.test_static_outside_review3 import (
    broken_lists,
    held_out_problems,
    list_problems,
    list_quotes,
)

SEED = "static_recall_outside_seed_v5.json"
RECALL = "static_recall_outside_v5_vllm_0.33.json"
EARLIER = ("v1", "v2", "v3", "v4")
PRECISION = "static_precision_outside3_vllm_0.33.json"
PRECISION_SEED = "static_precision_seed_outside3.json"


def precision_problems(review: dict, seed: dict) -> list[str]:
    """What is wrong with a judged precision sample against its seed (empty when consistent)."""
    out = []
    items = review["items"]
    if (review["seed"], review["n"]) != (seed["seed"], seed["n"]) or len(items) != seed["n"]:
        out.append("seed or size differ from the published seed file")
    if [r["index"] for r in items] != list(range(len(items))):
        out.append("indices are not 0..n-1")
    if not all(r["judgement"] in {"TP", "FP"} and r["why"] and r["reader_quote"]
               and isinstance(r["weight_derived"], bool) for r in items):
        out.append("an item lacks a verdict, a reason or a reader quote")
    t = review["totals"]
    if {k: t[k] for k in precision_totals(items)} != precision_totals(items):
        out.append("totals or Wilson intervals do not follow from the verdicts")
    if t["close_calls"] != sum(r["close_call"] for r in items):
        out.append("close_calls is not the count of close calls")
    return out


def test_recall_v5_uses_the_published_seed_and_is_judged():
    lists = _load(RECALL)
    assert list_problems(lists, _load(SEED)) == []
    assert lists["excluded"]["files"] == [
        f"static_recall_outside_{s}_vllm_0.33.json" for s in EARLIER]
    assert {k: v["population"] for k, v in lists["lists"].items()} == {
        "pwal": 110, "lazy": 0, "loader": 70}
    assert {k: v["real"] for k, v in lists["lists"].items()} == {
        "pwal": 4, "lazy": 0, "loader": 6}
    assert sum(c["host_scalar"] for b in lists["lists"].values() for c in b["candidates"]) == 1


def test_recall_v5_check_goes_red_on_a_flipped_verdict_or_a_moved_quote():
    lists, seed = _load(RECALL), _load(SEED)
    assert all(list_problems(broken, seed) for broken in broken_lists(lists))


def test_recall_v5_holds_no_earlier_candidate():
    assert held_out_problems(RECALL, EARLIER) == []
    assert held_out_problems(RECALL, EARLIER + ("v5",))


def test_recall_v5_quotes_are_the_installed_source():
    root = _vllm_parent()
    if root is None:
        pytest.skip("vLLM is not installed")
    quotes = list_quotes(RECALL)
    assert len(quotes) > 40 and [q for q in quotes if not quote_matches(q, root)] == []
    bent = [quotes[0].replace(" ", "  x ", 1)]
    assert [q for q in bent if not quote_matches(q, root)] == bent


def test_precision3_uses_the_published_seed_and_adds_up():
    review = _load(PRECISION)
    assert precision_problems(review, _load(PRECISION_SEED)) == []
    assert review["population"] == 116 and review["rules_commit"] == "cec0a76"
    t = review["totals"]
    assert (t["tp"], t["fp"], t["tp_weight_derived"]) == (37, 3, 36)


def check_goes_red(review: dict, seed: dict) -> None:
    """:func:`precision_problems` finds a flipped first verdict and a changed seed."""
    flipped = copy.deepcopy(review)
    item = flipped["items"][0]
    item["judgement"] = "FP" if item["judgement"] == "TP" else "TP"
    assert precision_problems(flipped, seed)
    assert precision_problems(dict(review, seed=review["seed"] + 1), seed)


def test_precision3_check_goes_red_on_a_flipped_verdict_or_another_seed():
    check_goes_red(_load(PRECISION), _load(PRECISION_SEED))


def check_reader_quotes(name: str, moved_index: int) -> None:
    """Every reader quote of the judged sample ``name`` is the installed source, and the quote
    of item ``moved_index`` (a ``:109`` line) no longer matches once moved a line down."""
    root = _vllm_parent()
    if root is None:
        pytest.skip("vLLM is not installed")
    review = _load(name)
    assert [r["reader_quote"] for r in review["items"]
            if not quote_matches(r["reader_quote"], root)] == []
    moved = review["items"][moved_index]["reader_quote"].replace(":109 ", ":110 ", 1)
    assert not quote_matches(moved, root)


def test_precision3_reader_quotes_are_the_installed_source():
    check_reader_quotes(PRECISION, 0)
