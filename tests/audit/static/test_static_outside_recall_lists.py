"""Each outside review's recall list (v6 onwards) agrees with its published seed, draw and source.

One row per review: the judged list must carry the seed published first, the pools' sizes,
exactly the candidates of the committed raw draw, a verdict with quotes for every candidate, no
candidate of an earlier list, and quotes that are the installed vLLM 0.33.0 source (one of them
the candidate's own store). Each check has a canary: a planted change makes it red.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass

import pytest

from tests.audit.static.test_static_outside_review import _load, _vllm_parent, quote_matches
from tests.audit.static.test_static_outside_review3 import (
    broken_lists,
    held_out_problems,
    list_problems,
    list_quotes,
)


@dataclass(frozen=True)
class RecallReview:
    """One judged recall list and the totals its review published."""

    stage: str
    rules_commit: str
    population: dict[str, int]
    real: dict[str, int]
    close_calls: dict[str, int]
    host_scalars: dict[str, int]
    drawn: int
    seed: int | None = None  # asserted where the review's doc quotes it
    n: int | None = None
    after: tuple[str, ...] = ()  # lettered lists drawn before this one (v10b before v11)

    @property
    def recall(self) -> str:
        return f"static_recall_outside_{self.stage}_vllm_0.33.json"

    @property
    def seed_file(self) -> str:
        return f"static_recall_outside_seed_{self.stage}.json"

    @property
    def draw(self) -> str:
        return f"static_recall_outside_{self.stage}_draw.json"

    @property
    def earlier(self) -> tuple[str, ...]:
        """Earlier stages in draw order: v1, ..., v10, v10b, v11 (a lettered list after its
        number)."""
        upto = _stage_number(self.stage)
        return tuple(sorted([f"v{k}" for k in range(1, upto)] + list(self.after),
                            key=lambda s: (_stage_number(s), s)))


def _stage_number(stage: str) -> int:
    return int("".join(ch for ch in stage if ch.isdigit()))  # v10b -> 10


REVIEWS = [
    RecallReview("v6", "56e78d6", population={"pwal": 90, "lazy": 0, "loader": 50},
                 real={"pwal": 9, "lazy": 0, "loader": 13},
                 close_calls={"pwal": 6, "lazy": 0, "loader": 7},
                 host_scalars={"pwal": 2, "lazy": 0, "loader": 1}, drawn=80),
    RecallReview("v7", "c8b75f0", population={"pwal": 50, "lazy": 0, "loader": 10},
                 real={"pwal": 9, "lazy": 0, "loader": 2},
                 close_calls={"pwal": 2, "lazy": 0, "loader": 2},
                 host_scalars={"pwal": 4, "lazy": 0, "loader": 0}, drawn=50,
                 seed=11761323406645978744, n=40),
    RecallReview("v8", "eb637cd",
                 population={"pwal": 10, "pwal_calls": 402, "pwal_xfile": 48, "lazy2": 42},
                 real={"pwal": 1, "pwal_calls": 0, "pwal_xfile": 0, "lazy2": 2},
                 close_calls={"pwal": 1, "pwal_calls": 0, "pwal_xfile": 0, "lazy2": 3},
                 host_scalars={"pwal": 0, "pwal_calls": 0, "pwal_xfile": 0, "lazy2": 0},
                 drawn=34, seed=8675706513435467143, n=8),
    RecallReview("v9", "001875c", population={"lazy2": 34, "pwal_xfile": 40},
                 real={"lazy2": 2, "pwal_xfile": 1},
                 close_calls={"lazy2": 1, "pwal_xfile": 2},
                 host_scalars={"lazy2": 0, "pwal_xfile": 0},
                 drawn=42, seed=13992828777516879383, n=8),
    RecallReview("v10", "671b8a1", population={"pwal_xfile": 32},
                 real={"pwal_xfile": 2}, close_calls={"pwal_xfile": 6},
                 host_scalars={"pwal_xfile": 0}, drawn=32, seed=11240739590851650122, n=32),
    RecallReview("v10b", "671b8a1", population={"recv_spec": 51}, real={"recv_spec": 4},
                 close_calls={"recv_spec": 6}, host_scalars={"recv_spec": 0}, drawn=30,
                 seed=14408267240178577638, n=30),
    RecallReview("v11", "9f3fb55", population={"recv_spec": 21}, real={"recv_spec": 5},
                 close_calls={"recv_spec": 6}, host_scalars={"recv_spec": 2}, drawn=21,
                 seed=8662683024837963434, n=21, after=("v10b",)),
    RecallReview("v12", "0327f67", population={"setup_hooks": 54}, real={"setup_hooks": 13},
                 close_calls={"setup_hooks": 11}, host_scalars={"setup_hooks": 1}, drawn=40,
                 seed=15400428300435512356, n=40, after=("v10b",)),
]
IDS = [r.stage for r in REVIEWS]


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


def _counts(lists: dict, field: str) -> dict[str, int]:
    return {k: sum(bool(c[field]) for c in v["candidates"]) for k, v in lists["lists"].items()}


@pytest.mark.parametrize("review", REVIEWS, ids=IDS)
def test_recall_list_uses_the_published_seed_and_is_judged(review: RecallReview):
    lists = _load(review.recall)
    assert list_problems(lists, _load(review.seed_file)) == []
    assert lists["rules_commit"] == review.rules_commit
    if review.seed is not None:
        assert (lists["seed"], lists["n"]) == (review.seed, review.n)
    assert lists["definition"] == _load("static_recall_outside_v6_vllm_0.33.json")["definition"]
    assert lists["excluded"]["files"] == [
        f"static_recall_outside_{s}_vllm_0.33.json" for s in review.earlier]
    assert {k: v["population"] for k, v in lists["lists"].items()} == review.population
    assert {k: v["real"] for k, v in lists["lists"].items()} == review.real
    assert all(c["real"] in (True, False) for v in lists["lists"].values()
               for c in v["candidates"])
    assert _counts(lists, "real") == review.real
    assert _counts(lists, "close_call") == review.close_calls
    assert _counts(lists, "host_scalar") == review.host_scalars
    assert not any(c["real"] and c["host_scalar"] for v in lists["lists"].values()
                   for c in v["candidates"])


@pytest.mark.parametrize("review", REVIEWS, ids=IDS)
def test_recall_list_holds_exactly_the_committed_draw(review: RecallReview):
    lists, draw = _load(review.recall), _load(review.draw)
    assert draw_problems(lists, draw) == []
    # canaries: a moved candidate, a renamed one, another seed
    name = next(k for k, v in lists["lists"].items() if v["candidates"])
    for change in ({"line": lists["lists"][name]["candidates"][0]["line"] + 1},
                   {"attr": "renamed_attr"}):
        swapped = copy.deepcopy(lists)
        swapped["lists"][name]["candidates"][0].update(change)
        assert draw_problems(swapped, draw)
    assert draw_problems(dict(lists, seed=lists["seed"] + 1), draw)


@pytest.mark.parametrize("review", REVIEWS, ids=IDS)
def test_recall_list_check_goes_red_on_a_flipped_verdict_or_a_moved_quote(review: RecallReview):
    lists, seed = _load(review.recall), _load(review.seed_file)
    assert all(list_problems(broken, seed) for broken in broken_lists(lists))


@pytest.mark.parametrize("review", REVIEWS, ids=IDS)
def test_recall_list_holds_no_earlier_candidate(review: RecallReview):
    assert held_out_problems(review.recall, review.earlier, size=review.drawn) == []
    assert held_out_problems(review.recall, review.earlier + (review.stage,), size=review.drawn)
    assert held_out_problems(review.recall, review.earlier, size=review.drawn + 1)


@pytest.mark.parametrize("review", REVIEWS, ids=IDS)
def test_recall_list_quotes_are_the_installed_source(review: RecallReview):
    root = _vllm_parent()
    if root is None:
        pytest.skip("vLLM is not installed")
    quotes = list_quotes(review.recall)
    assert len(quotes) > review.drawn and [q for q in quotes if not quote_matches(q, root)] == []
    bent = [quotes[-1].replace(" ", "  x ", 1)]
    assert [q for q in bent if not quote_matches(q, root)] == bent


def test_recall_v8_publishes_its_lists_per_list_sizes_and_draw_rules():
    """v8 drew four lists (three new text rules, committed with the seed in 9b4bdf2), all of
    the remaining ``pwal`` pool and 8 from each new list."""
    lists, seed = _load("static_recall_outside_v8_vllm_0.33.json"), _load(
        "static_recall_outside_seed_v8.json")
    assert tuple(lists["lists"]) == ("pwal", "pwal_calls", "pwal_xfile", "lazy2")
    assert seed["n_by_list"] == lists["n_by_list"] == {"pwal": 10}
    assert lists["draw_rules_commit"] == "9b4bdf2"
    assert {k: len(v["candidates"]) for k, v in lists["lists"].items()} == {
        "pwal": 10, "pwal_calls": 8, "pwal_xfile": 8, "lazy2": 8}
    resized = dict(seed, n_by_list={"pwal": 9})
    assert list_problems(lists, resized)


def test_recall_v9_draws_the_whole_rest_of_lazy2_and_8_of_pwal_xfile():
    """v9 drew two lists with the stage-v8 rules unchanged (9b4bdf2): all 34 candidates left in
    ``lazy2`` after v1-v8 and 8 of the 40 left in ``pwal_xfile``."""
    lists, seed = _load("static_recall_outside_v9_vllm_0.33.json"), _load(
        "static_recall_outside_seed_v9.json")
    assert tuple(lists["lists"]) == ("lazy2", "pwal_xfile")
    assert seed["n_by_list"] == lists["n_by_list"] == {"lazy2": 34, "pwal_xfile": 8}
    assert lists["draw_rules_commit"] == "9b4bdf2"
    assert {k: len(v["candidates"]) for k, v in lists["lists"].items()} == {
        "lazy2": 34, "pwal_xfile": 8}
    assert lists["lists"]["lazy2"]["population"] == len(lists["lists"]["lazy2"]["candidates"])
    resized = dict(seed, n_by_list={"lazy2": 33, "pwal_xfile": 8})
    assert list_problems(lists, resized)


def test_recall_v10_draws_the_whole_rest_of_pwal_xfile():
    """v10 drew one list with the stage-v8 rules unchanged (9b4bdf2): all 32 candidates left in
    ``pwal_xfile`` after v1-v9, so that pool is a census and is now exhausted."""
    lists, seed = _load("static_recall_outside_v10_vllm_0.33.json"), _load(
        "static_recall_outside_seed_v10.json")
    assert tuple(lists["lists"]) == ("pwal_xfile",)
    assert seed["n_by_list"] == lists["n_by_list"] == {"pwal_xfile": 32}
    assert lists["draw_rules_commit"] == "9b4bdf2"
    body = lists["lists"]["pwal_xfile"]
    assert body["population"] == len(body["candidates"]) == 32
    resized = dict(seed, n_by_list={"pwal_xfile": 31})
    assert list_problems(lists, resized)


def test_recall_v10b_draws_30_of_the_stage_v10_list_recv_spec():
    """v10b drew 30 of the 51 candidates of the stage-v10 list ``recv_spec`` (receiver calls
    into imported classes from the pwal and load_weights functions, and worker-side
    speculator code), whose rule was committed with the seed in e075a8f."""
    lists, seed = _load("static_recall_outside_v10b_vllm_0.33.json"), _load(
        "static_recall_outside_seed_v10b.json")
    assert tuple(lists["lists"]) == ("recv_spec",)
    assert lists["draw_rules_commit"] == "e075a8f"
    assert "n_by_list" not in seed
    assert len(lists["lists"]["recv_spec"]["candidates"]) == 30
    assert list_problems(lists, dict(seed, n=29))


def test_recall_v11_is_the_census_of_the_rest_of_recv_spec():
    """v11 drew all 21 candidates left in the stage-v10 list ``recv_spec`` (rule unchanged since
    e075a8f) after v1-v10b: with v10b's 30 they are exactly its pool of 51, so that pool is a
    census and is now exhausted."""
    lists, seed = _load("static_recall_outside_v11_vllm_0.33.json"), _load(
        "static_recall_outside_seed_v11.json")
    v10b = _load("static_recall_outside_v10b_vllm_0.33.json")["lists"]["recv_spec"]
    assert tuple(lists["lists"]) == ("recv_spec",)
    assert seed["n_by_list"] == lists["n_by_list"] == {"recv_spec": 21}
    assert lists["draw_rules_commit"] == "e075a8f"
    body = lists["lists"]["recv_spec"]
    assert body["population"] == len(body["candidates"]) == 21

    def keys(cands: list[dict]) -> set[tuple[str, int, str]]:
        return {(c["file"], c["line"], c["attr"]) for c in cands}

    assert not keys(body["candidates"]) & keys(v10b["candidates"])
    assert len(keys(body["candidates"]) | keys(v10b["candidates"])) == v10b["population"] == 51
    assert list_problems(lists, dict(seed, n_by_list={"recv_spec": 20}))


def test_recall_v12_draws_40_of_the_stage_v12_list_setup_hooks():
    """v12 drew 40 of the 54 candidates of the stage-v12 list ``setup_hooks`` (load-time setup
    outside PWAL, flag-guarded first-call initialisation and weight-derived stores), whose rule
    was committed with the seed in 7292327; the v11 verdicts are excluded too."""
    lists, seed = _load("static_recall_outside_v12_vllm_0.33.json"), _load(
        "static_recall_outside_seed_v12.json")
    assert tuple(lists["lists"]) == ("setup_hooks",)
    assert lists["draw_rules_commit"] == "7292327"
    assert "n_by_list" not in seed
    assert lists["excluded"]["files"][-1] == "static_recall_outside_v11_vllm_0.33.json"
    assert len(lists["lists"]["setup_hooks"]["candidates"]) == 40
    assert list_problems(lists, dict(seed, n=39))
