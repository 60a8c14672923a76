"""The fourth outside review's files agree: seeds published first, totals, quotes.

The v5 recall list (static_recall_outside_v5_vllm_0.33.json) must carry its published seed, the
v5 pools' sizes, a verdict with quotes for every candidate, no candidate of an earlier list, and
quotes that are the installed vLLM 0.33.0 source (one of them the candidate's own store).
"""

from __future__ import annotations

import copy

import pytest

from tests.audit.static.test_static_outside_review import _load, _vllm_parent, quote_matches
from tests.audit.static.test_static_outside_review3 import list_problems

SEED = "static_recall_outside_seed_v5.json"
RECALL = "static_recall_outside_v5_vllm_0.33.json"
EARLIER = ("v1", "v2", "v3", "v4")


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
    flipped = copy.deepcopy(lists)
    c = flipped["lists"]["loader"]["candidates"][0]
    c["real"] = not c["real"]
    assert list_problems(flipped, seed)
    moved = copy.deepcopy(lists)
    c = moved["lists"]["pwal"]["candidates"][0]
    store = f"{c['file']}:{c['line']} "
    c["quotes"] = [q.replace(store, f"{c['file']}:{c['line'] + 1} ") for q in c["quotes"]]
    assert list_problems(moved, seed)
    assert list_problems(dict(lists, seed=lists["seed"] + 1), seed)


def test_recall_v5_holds_no_earlier_candidate():
    earlier = set()
    for stage in EARLIER:
        for body in _load(f"static_recall_outside_{stage}_vllm_0.33.json")["lists"].values():
            earlier |= {(c["file"], c["line"], c["attr"]) for c in body["candidates"]}
    v5 = {(c["file"], c["line"], c["attr"])
          for body in _load(RECALL)["lists"].values() for c in body["candidates"]}
    assert len(v5) == 40 and not v5 & earlier


def test_recall_v5_quotes_are_the_installed_source():
    root = _vllm_parent()
    if root is None:
        pytest.skip("vLLM is not installed")
    quotes = [q for body in _load(RECALL)["lists"].values() for c in body["candidates"]
              for q in c["quotes"]]
    assert len(quotes) > 40
    assert [q for q in quotes if not quote_matches(q, root)] == []
    bent = [quotes[0].replace(" ", "  x ", 1)]
    assert [q for q in bent if not quote_matches(q, root)] == bent
