"""The third outside review's recall files agree: seed published first, totals, quotes.

The v4 list (static_recall_outside_v4_vllm_0.33.json) must carry its published seed, the v4
pools' sizes, a verdict with quotes for every candidate, no candidate of an earlier list, and
quotes that are the installed vLLM 0.33.0 source (one of them the candidate's own store).
The result file must count exactly the list's real sites with Wilson 95 % intervals.
"""

from __future__ import annotations

import copy

import pytest

from tests.audit.static.test_static_outside_review import (
    _load,
    _vllm_parent,
    _wilson,
    quote_matches,
)

SEED = "static_recall_outside_seed_v4.json"
RECALL = "static_recall_outside_v4_vllm_0.33.json"
RESULT = "static_recall_outside_result_v4_vllm_0.33.json"
EARLIER = ("v1", "v2", "v3")


def candidate_keys(*names: str) -> set[tuple]:
    """(file, line, attr) of every candidate of the named judged recall lists."""
    return {(c["file"], c["line"], c["attr"]) for name in names
            for body in _load(name)["lists"].values() for c in body["candidates"]}


def list_quotes(name: str) -> list[str]:
    """Every quote of every candidate of a judged recall list."""
    return [q for body in _load(name)["lists"].values() for c in body["candidates"]
            for q in c["quotes"]]


def held_out_problems(name: str, earlier: tuple[str, ...], size: int = 40) -> list[str]:
    """Whether a judged list has ``size`` candidates, none of them in an earlier stage's list."""
    keys = candidate_keys(name)
    seen = candidate_keys(*(f"static_recall_outside_{s}_vllm_0.33.json" for s in earlier))
    return ([f"{len(keys)} candidates, not {size}"] if len(keys) != size else []) + [
        f"{k} was in an earlier list" for k in sorted(keys & seen)]


def list_problems(lists: dict, seed: dict) -> list[str]:
    """What is wrong with a judged list against its published seed (empty when consistent)."""
    out = []
    if (lists["seed"], lists["n"]) != (seed["seed"], seed["n"]) or not lists["tensor_only"]:
        out.append("seed, n or tensor_only differ from the published seed file")
    for name, body in lists["lists"].items():
        cands = body["candidates"]
        n = seed.get("n_by_list", {}).get(name, seed["n"])
        if len(cands) != min(n, body["population"]):
            out.append(f"{name}: {len(cands)} candidates for population {body['population']}")
        if body["real"] != sum(c["real"] for c in cands):
            out.append(f"{name}: real {body['real']} is not the count of real verdicts")
        for c in cands:
            where = f"{c['file']}:{c['line']} {c['attr']}"
            if not (isinstance(c["real"], bool) and c["why"] and c["quotes"]):
                out.append(f"{where}: no verdict, reason or quote")
            elif not all(isinstance(c.get(k, False), bool) for k in ("close_call", "host_scalar")):
                out.append(f"{where}: close_call or host_scalar is not a bool")
            elif c["real"] and c["host_scalar"]:
                out.append(f"{where}: a host scalar counted as real")
            elif not any(q.startswith(f"{c['file']}:{c['line']} ") for q in c["quotes"]):
                out.append(f"{where}: no quote of the store line")
    return out


def result_problems(result: dict, lists: dict) -> list[str]:
    """What is wrong with a measured result against the judged list (empty when consistent)."""
    out = []
    real = {name: {(c["file"], c["line"], c["attr"]) for c in body["candidates"] if c["real"]}
            for name, body in lists["lists"].items()}
    if {n for n, sites in real.items() if sites} != set(result["lists"]):
        out.append("the result's lists are not the lists with real sites")
    for name, body in result["lists"].items():
        if {(s["file"], s["line"], s["attr"]) for s in body["sites"]} != real.get(name):
            out.append(f"{name}: sites differ from the real verdicts")
        if body["found"] != sum(s["found"] for s in body["sites"]):
            out.append(f"{name}: found is not the count of found sites")
        if body["real"] != len(body["sites"]) or body["wilson95"] != _wilson(
                body["found"], body["real"]):
            out.append(f"{name}: real or Wilson interval wrong")
    if (result["all"]["found"] != sum(b["found"] for b in result["lists"].values())
            or result["all"]["real"] != sum(len(s) for s in real.values())):
        out.append("the all-lists totals are wrong")
    return out


def test_recall_v4_uses_the_published_seed_and_is_judged():
    lists = _load(RECALL)
    assert list_problems(lists, _load(SEED)) == []
    assert {k: v["population"] for k, v in lists["lists"].items()} == {
        "pwal": 130, "lazy": 0, "loader": 90}
    assert {k: v["real"] for k, v in lists["lists"].items()} == {
        "pwal": 7, "lazy": 0, "loader": 6}


def broken_lists(lists: dict) -> list[dict]:
    """Copies of a judged list with one planted fault each: a flipped verdict (first candidate
    of the first list), the store quotes moved one line and a dropped candidate (first and last
    candidate of the last list with candidates), another seed, and a real site counted as a
    host scalar."""
    names = [k for k, v in lists["lists"].items() if v["candidates"]]
    flipped = copy.deepcopy(lists)
    c = flipped["lists"][names[0]]["candidates"][0]
    c["real"] = not c["real"]
    moved = copy.deepcopy(lists)
    c = moved["lists"][names[-1]]["candidates"][0]
    store = f"{c['file']}:{c['line']} "
    c["quotes"] = [q.replace(store, f"{c['file']}:{c['line'] + 1} ") for q in c["quotes"]]
    dropped = copy.deepcopy(lists)
    dropped["lists"][names[-1]]["candidates"].pop()
    out = [flipped, moved, dropped, dict(lists, seed=lists["seed"] + 1)]
    scalar = copy.deepcopy(lists)
    real = [c for k in names for c in scalar["lists"][k]["candidates"] if c["real"]]
    if real:
        real[0]["host_scalar"] = True
        out.append(scalar)
    return out


def test_recall_v4_check_goes_red_on_a_flipped_verdict_or_a_moved_quote():
    lists, seed = _load(RECALL), _load(SEED)
    assert all(list_problems(broken, seed) for broken in broken_lists(lists))


def test_recall_v4_holds_no_earlier_candidate():
    assert held_out_problems(RECALL, EARLIER) == []
    assert held_out_problems(RECALL, EARLIER + ("v4",))


def test_recall_v4_quotes_are_the_installed_source():
    root = _vllm_parent()
    if root is None:
        pytest.skip("vLLM is not installed")
    quotes = list_quotes(RECALL)
    assert len(quotes) > 40
    assert [q for q in quotes if not quote_matches(q, root)] == []


def test_recall_v4_result_counts_exactly_the_real_sites():
    result, lists = _load(RESULT), _load(RECALL)
    assert result_problems(result, lists) == []
    assert (result["all"]["real"], result["all"]["wilson95"]) == (
        13, _wilson(result["all"]["found"], 13))


def test_recall_v4_result_check_goes_red_on_a_dropped_or_recounted_site():
    result, lists = _load(RESULT), _load(RECALL)
    dropped = copy.deepcopy(result)
    dropped["lists"]["pwal"]["sites"].pop()
    assert result_problems(dropped, lists)
    recounted = copy.deepcopy(result)
    recounted["lists"]["loader"]["found"] += 1
    assert result_problems(recounted, lists)
