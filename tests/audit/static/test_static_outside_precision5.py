"""The seventh outside review's precision sample agrees: seed published first, draw, totals, quotes.

The precision sample on the rules of ``ace6f47`` (static_precision_outside5_vllm_0.33.json) must
carry its published seed and size (static_precision_seed_outside5.json, committed before the
draw), exactly the findings of the committed raw draw (static_precision_outside5_draw.json),
the two reviewers' files merged unchanged, verdicts that add up to its totals and Wilson
intervals, and reader quotes that are the installed vLLM 0.33.0 source.
"""

from __future__ import annotations

import copy
import re

import pytest

from tests.audit.static.test_static_outside_review import _load, _vllm_parent, quote_matches
from tests.audit.static.test_static_outside_review4 import check_goes_red, precision_problems
from tests.audit.static.test_static_outside_review6 import clause_problems

PRECISION = "static_precision_outside5_vllm_0.33.json"
SEED = "static_precision_seed_outside5.json"
DRAW = "static_precision_outside5_draw.json"
JUDGED = ("static_precision_outside5_judged_a.json", "static_precision_outside5_judged_b.json")


def draw_problems(review: dict, draw: dict, judged: list[dict]) -> list[str]:
    """What differs between the judged sample, the raw draw and the reviewers' files."""
    out = []
    if (review["seed"], review["population"]) != (draw["seed"], draw["population"]):
        out.append("seed or population differ from the raw draw")
    key = ("file", "line", "attr")
    if [tuple(r[k] for k in key) for r in review["items"]] != \
            [tuple(s[k] for k in key) for s in draw["sample"]]:
        out.append("the judged findings are not the drawn ones, in order")
    merged = sorted((r for j in judged for r in j["items"]), key=lambda r: r["index"])
    if merged != review["items"]:
        out.append("the items are not the reviewers' files merged unchanged")
    return out


def test_precision5_uses_the_published_seed_and_adds_up():
    review = _load(PRECISION)
    assert precision_problems(review, _load(SEED)) == []
    assert clause_problems(review) == []
    assert draw_problems(review, _load(DRAW), [_load(j) for j in JUDGED]) == []
    assert review["population"] == 132 and review["rules_commit"] == "ace6f47"
    t = review["totals"]
    assert (t["tp"], t["fp"], t["tp_weight_derived"]) == (32, 8, 28)
    assert (t["tp_without_kernel_format_clause"], t["close_calls"]) == (19, 11)
    assert t["wilson95"] == [0.6524, 0.895]


def test_precision5_checks_go_red_on_a_flipped_verdict_a_swapped_item_or_another_seed():
    review, draw = _load(PRECISION), _load(DRAW)
    check_goes_red(review, _load(SEED))
    judged = [_load(j) for j in JUDGED]
    swapped = copy.deepcopy(review)
    swapped["items"][0], swapped["items"][1] = swapped["items"][1], swapped["items"][0]
    assert draw_problems(swapped, draw, judged)
    edited = copy.deepcopy(review)
    edited["items"][5]["why"] += " (edited after merging)"
    assert draw_problems(edited, draw, judged)


def test_precision5_reader_quotes_are_the_installed_source():
    root = _vllm_parent()
    if root is None:
        pytest.skip("vLLM is not installed")
    items = _load(PRECISION)["items"]
    assert [r["reader_quote"] for r in items if not quote_matches(r["reader_quote"], root)] == []
    first = items[0]["reader_quote"]
    moved = re.sub(r":(\d+) ", lambda m: f":{int(m.group(1)) + 1} ", first, count=1)
    assert not quote_matches(moved, root)
