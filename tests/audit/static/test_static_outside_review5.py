"""The fifth outside review's recall v6 list agrees with its published seed, draw and source.

The v6 recall list (static_recall_outside_v6_vllm_0.33.json) must carry the seed published
first in static_recall_outside_seed_v6.json, the v6 pools' sizes, exactly the candidates of the
committed raw draw (static_recall_outside_v6_draw.json), a verdict with quotes for every
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

SEED = "static_recall_outside_seed_v6.json"
DRAW = "static_recall_outside_v6_draw.json"
RECALL = "static_recall_outside_v6_vllm_0.33.json"
EARLIER = ("v1", "v2", "v3", "v4", "v5")


def draw_problems(lists: dict, draw: dict) -> list[str]:
    """Where the judged list departs from the committed raw draw (empty when it does not)."""
    out = []
    if (lists["seed"], lists["n"], lists["excluded"]) != (draw["seed"], draw["n"],
                                                          draw["excluded"]):
        out.append("seed, n or exclusions differ from the raw draw")
    for name, body in draw["lists"].items():
        judged = lists["lists"][name]
        keys = [(c["file"], c["line"], c["attr"]) for c in judged["candidates"]]
        if judged["population"] != body["population"] or keys != [
                (c["file"], c["line"], c["attr"]) for c in body["candidates"]]:
            out.append(f"{name}: population or candidates differ from the raw draw")
    return out


def test_recall_v6_uses_the_published_seed_and_is_judged():
    lists = _load(RECALL)
    assert list_problems(lists, _load(SEED)) == []
    assert lists["rules_commit"] == "56e78d6"
    assert lists["excluded"]["files"] == [
        f"static_recall_outside_{s}_vllm_0.33.json" for s in EARLIER]
    assert {k: v["population"] for k, v in lists["lists"].items()} == {
        "pwal": 90, "lazy": 0, "loader": 50}
    assert {k: v["real"] for k, v in lists["lists"].items()} == {
        "pwal": 9, "lazy": 0, "loader": 13}
    cands = {k: v["candidates"] for k, v in lists["lists"].items()}
    assert {k: sum(c["close_call"] for c in v) for k, v in cands.items()} == {
        "pwal": 6, "lazy": 0, "loader": 7}
    assert {k: sum(c["host_scalar"] for c in v) for k, v in cands.items()} == {
        "pwal": 2, "lazy": 0, "loader": 1}


def test_recall_v6_holds_exactly_the_committed_draw():
    assert draw_problems(_load(RECALL), _load(DRAW)) == []


def test_recall_v6_draw_check_goes_red_on_a_swapped_candidate():
    lists, draw = _load(RECALL), _load(DRAW)
    swapped = dict(lists, lists=dict(lists["lists"]))
    pwal = dict(swapped["lists"]["pwal"])
    pwal["candidates"] = [dict(pwal["candidates"][0], line=pwal["candidates"][0]["line"] + 1),
                          *pwal["candidates"][1:]]
    swapped["lists"]["pwal"] = pwal
    assert draw_problems(swapped, draw)
    assert draw_problems(dict(lists, seed=lists["seed"] + 1), draw)


def test_recall_v6_check_goes_red_on_a_flipped_verdict_or_a_moved_quote():
    lists, seed = _load(RECALL), _load(SEED)
    assert all(list_problems(broken, seed) for broken in broken_lists(lists))


def test_recall_v6_holds_no_earlier_candidate():
    assert held_out_problems(RECALL, EARLIER, size=80) == []
    assert held_out_problems(RECALL, EARLIER + ("v6",), size=80)


def test_recall_v6_quotes_are_the_installed_source():
    root = _vllm_parent()
    if root is None:
        pytest.skip("vLLM is not installed")
    quotes = list_quotes(RECALL)
    assert len(quotes) > 80 and [q for q in quotes if not quote_matches(q, root)] == []
    bent = [quotes[0].replace(" ", "  x ", 1)]
    assert [q for q in bent if not quote_matches(q, root)] == bent
