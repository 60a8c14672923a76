"""The sixth outside review's recall v7 list agrees with its published seed, draw and source.

The v7 recall list (static_recall_outside_v7_vllm_0.33.json) must carry the seed published
first in static_recall_outside_seed_v7.json, the v7 pools' sizes, exactly the candidates of the
committed raw draw (static_recall_outside_v7_draw.json), a verdict with quotes for every
candidate, no candidate of an earlier list, and quotes that are the installed vLLM 0.33.0
source (one of them the candidate's own store).
"""

from __future__ import annotations

import pytest

from tests.audit.static.test_static_outside_review import _load, _vllm_parent, quote_matches
from tests.audit.static.test_static_outside_review3 import (
    broken_lists,
    held_out_problems,
    list_problems,
    list_quotes,
)
from tests.audit.static.test_static_outside_review5 import draw_problems

SEED = "static_recall_outside_seed_v7.json"
DRAW = "static_recall_outside_v7_draw.json"
RECALL = "static_recall_outside_v7_vllm_0.33.json"
EARLIER = ("v1", "v2", "v3", "v4", "v5", "v6")


def test_recall_v7_uses_the_published_seed_and_is_judged():
    lists = _load(RECALL)
    assert list_problems(lists, _load(SEED)) == []
    assert lists["seed"] == 11761323406645978744 and lists["n"] == 40
    assert lists["rules_commit"] == "c8b75f0"
    assert lists["definition"] == _load("static_recall_outside_v6_vllm_0.33.json")["definition"]
    assert lists["excluded"]["files"] == [
        f"static_recall_outside_{s}_vllm_0.33.json" for s in EARLIER]
    assert {k: v["population"] for k, v in lists["lists"].items()} == {
        "pwal": 50, "lazy": 0, "loader": 10}
    assert {k: v["real"] for k, v in lists["lists"].items()} == {
        "pwal": 9, "lazy": 0, "loader": 2}
    cands = {k: v["candidates"] for k, v in lists["lists"].items()}
    assert all(c["real"] in (True, False) for v in cands.values() for c in v)
    assert {k: sum(c["real"] for c in v) for k, v in cands.items()} == {
        "pwal": 9, "lazy": 0, "loader": 2}
    assert {k: sum(c["close_call"] for c in v) for k, v in cands.items()} == {
        "pwal": 2, "lazy": 0, "loader": 2}
    assert {k: sum(c["host_scalar"] for c in v) for k, v in cands.items()} == {
        "pwal": 4, "lazy": 0, "loader": 0}
    assert not any(c["real"] and c["host_scalar"] for v in cands.values() for c in v)


def test_recall_v7_holds_exactly_the_committed_draw():
    assert draw_problems(_load(RECALL), _load(DRAW)) == []


def test_recall_v7_draw_check_goes_red_on_a_swapped_candidate():
    lists, draw = _load(RECALL), _load(DRAW)
    swapped = dict(lists, lists=dict(lists["lists"]))
    loader = dict(swapped["lists"]["loader"])
    loader["candidates"] = [*loader["candidates"][:-1],
                            dict(loader["candidates"][-1], attr="w2_scale_rows")]
    swapped["lists"]["loader"] = loader
    assert draw_problems(swapped, draw)
    assert draw_problems(dict(lists, seed=lists["seed"] + 1), draw)


def test_recall_v7_check_goes_red_on_a_flipped_verdict_or_a_moved_quote():
    lists, seed = _load(RECALL), _load(SEED)
    assert all(list_problems(broken, seed) for broken in broken_lists(lists))


def test_recall_v7_holds_no_earlier_candidate():
    assert held_out_problems(RECALL, EARLIER, size=50) == []
    assert held_out_problems(RECALL, EARLIER + ("v7",), size=50)


def test_recall_v7_quotes_are_the_installed_source():
    root = _vllm_parent()
    if root is None:
        pytest.skip("vLLM is not installed")
    quotes = list_quotes(RECALL)
    assert len(quotes) > 50 and [q for q in quotes if not quote_matches(q, root)] == []
    bent = [quotes[-1].replace(" ", "  x ", 1)]
    assert [q for q in bent if not quote_matches(q, root)] == bent
