"""The eighth outside review's recall v8 list agrees with its published seed, draw and source.

The v8 recall list (static_recall_outside_v8_vllm_0.33.json) must carry the seed published
first in static_recall_outside_seed_v8.json (with the stage-v8 draw rules, commit 9b4bdf2), the
v8 pools' sizes, exactly the candidates of the committed raw draw
(static_recall_outside_v8_draw.json), a verdict with quotes for every candidate, no candidate of
an earlier list, and quotes that are the installed vLLM 0.33.0 source (one of them the
candidate's own store).
"""

from __future__ import annotations

import copy

import pytest

from tests.audit.static.test_static_outside_recall_lists import draw_problems
from tests.audit.static.test_static_outside_review import _load, _vllm_parent, quote_matches
from tests.audit.static.test_static_outside_review3 import held_out_problems, list_quotes

SEED = "static_recall_outside_seed_v8.json"
DRAW = "static_recall_outside_v8_draw.json"
RECALL = "static_recall_outside_v8_vllm_0.33.json"
EARLIER = ("v1", "v2", "v3", "v4", "v5", "v6", "v7")
LISTS = ("pwal", "pwal_calls", "pwal_xfile", "lazy2")


def v8_list_problems(lists: dict, seed: dict) -> list[str]:
    """What is wrong with the judged v8 list against its seed (per-list n included)."""
    out = []
    if (lists["seed"], lists["n"]) != (seed["seed"], seed["n"]) or not lists["tensor_only"]:
        out.append("seed, n or tensor_only differ from the published seed file")
    if tuple(lists["lists"]) != LISTS:
        out.append(f"lists {tuple(lists['lists'])}, not {LISTS}")
    for name, body in lists["lists"].items():
        cands = body["candidates"]
        n = seed.get("n_by_list", {}).get(name, seed["n"])
        if len(cands) != min(n, body["population"]):
            out.append(f"{name}: {len(cands)} candidates for population {body['population']}")
        if body["real"] != sum(c["real"] is True for c in cands):
            out.append(f"{name}: real {body['real']} is not the count of real verdicts")
        for c in cands:
            where = f"{c['file']}:{c['line']} {c['attr']}"
            if not (isinstance(c["real"], bool) and c["why"] and c["quotes"]):
                out.append(f"{where}: no verdict, reason or quote")
            elif not (isinstance(c["close_call"], bool) and isinstance(c["host_scalar"], bool)):
                out.append(f"{where}: close_call or host_scalar is not a bool")
            elif c["real"] and c["host_scalar"]:
                out.append(f"{where}: a host scalar counted as real")
            elif not any(q.startswith(f"{c['file']}:{c['line']} ") for q in c["quotes"]):
                out.append(f"{where}: no quote of the store line")
    return out


def test_recall_v8_uses_the_published_seed_and_is_judged():
    lists, seed = _load(RECALL), _load(SEED)
    assert v8_list_problems(lists, seed) == []
    assert lists["seed"] == 8675706513435467143 and lists["n"] == 8
    assert seed["n_by_list"] == lists["n_by_list"] == {"pwal": 10}
    assert lists["rules_commit"] == "eb637cd" and lists["draw_rules_commit"] == "9b4bdf2"
    assert lists["definition"] == _load("static_recall_outside_v7_vllm_0.33.json")["definition"]
    assert lists["excluded"]["files"] == [
        f"static_recall_outside_{s}_vllm_0.33.json" for s in EARLIER]
    assert {k: v["population"] for k, v in lists["lists"].items()} == {
        "pwal": 10, "pwal_calls": 402, "pwal_xfile": 48, "lazy2": 42}
    cands = {k: v["candidates"] for k, v in lists["lists"].items()}
    assert {k: len(v) for k, v in cands.items()} == {
        "pwal": 10, "pwal_calls": 8, "pwal_xfile": 8, "lazy2": 8}
    assert {k: sum(c["real"] for c in v) for k, v in cands.items()} == {
        "pwal": 1, "pwal_calls": 0, "pwal_xfile": 0, "lazy2": 2}
    assert {k: sum(c["close_call"] for c in v) for k, v in cands.items()} == {
        "pwal": 1, "pwal_calls": 0, "pwal_xfile": 0, "lazy2": 3}
    assert {k: sum(c["host_scalar"] for c in v) for k, v in cands.items()} == {
        "pwal": 0, "pwal_calls": 0, "pwal_xfile": 0, "lazy2": 0}


def test_recall_v8_holds_exactly_the_committed_draw():
    assert draw_problems(_load(RECALL), _load(DRAW)) == []


def test_recall_v8_draw_check_goes_red_on_a_swapped_candidate():
    lists, draw = _load(RECALL), _load(DRAW)
    swapped = copy.deepcopy(lists)
    swapped["lists"]["lazy2"]["candidates"][-1]["attr"] = "_cu_2_q"
    assert draw_problems(swapped, draw)
    assert draw_problems(dict(lists, seed=lists["seed"] + 1), draw)


def _broken(lists: dict) -> list[dict]:
    """Copies with one planted fault each: a flipped verdict, a store quote moved one line,
    another seed, a dropped candidate, a host scalar counted as real."""
    flipped = copy.deepcopy(lists)
    c = flipped["lists"]["pwal"]["candidates"][0]
    c["real"] = not c["real"]
    moved = copy.deepcopy(lists)
    c = moved["lists"]["lazy2"]["candidates"][0]
    store = f"{c['file']}:{c['line']} "
    c["quotes"] = [q.replace(store, f"{c['file']}:{c['line'] + 1} ") for q in c["quotes"]]
    dropped = copy.deepcopy(lists)
    dropped["lists"]["pwal_xfile"]["candidates"].pop()
    scalar = copy.deepcopy(lists)
    next(c for c in scalar["lists"]["lazy2"]["candidates"] if c["real"])["host_scalar"] = True
    return [flipped, moved, dict(lists, seed=lists["seed"] + 1), dropped, scalar]


def test_recall_v8_check_goes_red_on_each_planted_fault():
    lists, seed = _load(RECALL), _load(SEED)
    assert all(v8_list_problems(broken, seed) for broken in _broken(lists))


def test_recall_v8_holds_no_earlier_candidate():
    assert held_out_problems(RECALL, EARLIER, size=34) == []
    assert held_out_problems(RECALL, EARLIER + ("v8",), size=34)


def test_recall_v8_quotes_are_the_installed_source():
    root = _vllm_parent()
    if root is None:
        pytest.skip("vLLM is not installed")
    quotes = list_quotes(RECALL)
    assert len(quotes) > 100 and [q for q in quotes if not quote_matches(q, root)] == []
    bent = [quotes[-1].replace(" ", "  x ", 1)]
    assert [q for q in bent if not quote_matches(q, root)] == bent
