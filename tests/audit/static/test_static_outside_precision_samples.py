"""Each outside precision sample (seventh review on) agrees: seed published first, draw, totals.

One row per review: the judged sample (static_precision_outsideK_vllm_0.33.json) must carry its
published seed and size (static_precision_seed_outsideK.json, committed before the draw),
exactly the findings of the committed raw draw (static_precision_outsideK_draw.json), the
reviewers' files merged unchanged, verdicts that add up to its totals and Wilson intervals, and
reader quotes that are the installed vLLM 0.33.0 source. Each check has a canary.
"""

from __future__ import annotations

import copy
import re
from dataclasses import dataclass

import pytest

from tests.audit.static.test_static_outside_review import _load, _vllm_parent, quote_matches
from tests.audit.static.test_static_outside_review4 import check_goes_red, precision_problems
from tests.audit.static.test_static_outside_review6 import clause_problems


@dataclass(frozen=True)
class PrecisionReview:
    """One judged precision sample and the totals its review published."""

    k: int
    judges: str
    rules_commit: str
    population: int
    tp_fp_weight: tuple[int, int, int]
    unclaused_close: tuple[int, int]
    wilson95: list[float]

    @property
    def sample(self) -> str:
        return f"static_precision_outside{self.k}_vllm_0.33.json"

    @property
    def seed(self) -> str:
        return f"static_precision_seed_outside{self.k}.json"

    @property
    def draw(self) -> str:
        return f"static_precision_outside{self.k}_draw.json"

    @property
    def judged(self) -> list[dict]:
        return [_load(f"static_precision_outside{self.k}_judged_{j}.json") for j in self.judges]


REVIEWS = [
    PrecisionReview(5, "ab", "ace6f47", 132, (32, 8, 28), (19, 11), [0.6524, 0.895]),
    PrecisionReview(6, "abc", "2c3cde6", 132, (31, 9, 27), (17, 11), [0.625, 0.8768]),
    PrecisionReview(7, "abc", "5228e54", 122, (38, 2, 34), (25, 10), [0.835, 0.9862]),
    PrecisionReview(8, "abc", "a6035f0", 127, (39, 1, 38), (20, 14), [0.8712, 0.9956]),
    PrecisionReview(9, "abc", "0e76ce8", 137, (38, 2, 38), (27, 9), [0.835, 0.9862]),
    PrecisionReview(10, "abc", "3d86589", 139, (39, 1, 37), (22, 11), [0.8712, 0.9956]),
    PrecisionReview(11, "abc", "3614d96", 143, (39, 1, 35), (23, 5), [0.8712, 0.9956]),
    PrecisionReview(12, "ab", "dcbb707", 144, (40, 0, 38), (29, 9), [0.9124, 1.0]),
]
IDS = [f"outside{r.k}" for r in REVIEWS]


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


@pytest.mark.parametrize("row", REVIEWS, ids=IDS)
def test_precision_sample_uses_the_published_seed_and_adds_up(row: PrecisionReview):
    review = _load(row.sample)
    assert precision_problems(review, _load(row.seed)) == []
    assert clause_problems(review) == []
    assert draw_problems(review, _load(row.draw), row.judged) == []
    assert (review["population"], review["rules_commit"]) == (row.population, row.rules_commit)
    t = review["totals"]
    assert (t["tp"], t["fp"], t["tp_weight_derived"]) == row.tp_fp_weight
    assert (t["tp_without_kernel_format_clause"], t["close_calls"]) == row.unclaused_close
    assert t["wilson95"] == row.wilson95


@pytest.mark.parametrize("row", REVIEWS, ids=IDS)
def test_precision_checks_go_red_on_a_flipped_verdict_a_swapped_item_or_another_seed(
        row: PrecisionReview):
    review, draw = _load(row.sample), _load(row.draw)
    check_goes_red(review, _load(row.seed))
    judged = row.judged
    swapped = copy.deepcopy(review)
    swapped["items"][0], swapped["items"][1] = swapped["items"][1], swapped["items"][0]
    assert draw_problems(swapped, draw, judged)
    edited = copy.deepcopy(review)
    edited["items"][5]["why"] += " (edited after merging)"
    assert draw_problems(edited, draw, judged)


@pytest.mark.parametrize("row", REVIEWS, ids=IDS)
def test_precision_reader_quotes_are_the_installed_source(row: PrecisionReview):
    root = _vllm_parent()
    if root is None:
        pytest.skip("vLLM is not installed")
    items = _load(row.sample)["items"]
    assert [r["reader_quote"] for r in items if not quote_matches(r["reader_quote"], root)] == []
    first = items[0]["reader_quote"]
    moved = re.sub(r":(\d+)(:?) ", lambda m: f":{int(m.group(1)) + 1}{m.group(2)} ", first, count=1)
    assert not quote_matches(moved, root)


def reader_problems(review: dict) -> list[str]:
    """Where the published reader-verdict totals do not follow from the judges' items."""
    items = review["items"]
    verdicts = [r["audit_reader_verdict"] for r in items]
    out = []
    if any(v not in ("right", "weak", "wrong") for v in verdicts):
        out.append("a reader verdict outside right / weak / wrong")
    t = review["totals"]
    if t["audit_reader"] != {v: verdicts.count(v) for v in ("right", "weak", "wrong")}:
        out.append("the reader totals do not count the items")
    if t["derives_from_right"] != sum(bool(r["derives_from_right"]) for r in items):
        out.append("the derives_from total does not count the items")
    return out


def test_thirteenth_review_judges_the_audits_readers_and_the_totals_count_them():
    review = _load("static_precision_outside11_vllm_0.33.json")
    assert reader_problems(review) == []
    assert review["totals"]["audit_reader"] == {"right": 30, "weak": 5, "wrong": 5}
    wrong = [(r["file"].rsplit("/", 1)[-1], r["line"]) for r in review["items"]
             if r["audit_reader_verdict"] == "wrong"]
    assert ("inc_mxfp4_moe.py", 214) in wrong and ("mxfp4.py", 1004) in wrong
    # canaries: a flipped reader verdict, an unknown verdict, a flipped derives_from
    for field, value in (("audit_reader_verdict", "wrong"), ("audit_reader_verdict", "fine"),
                         ("derives_from_right", False)):
        edited = copy.deepcopy(review)
        first = next(r for r in edited["items"] if r[field] != value)
        first[field] = value
        assert reader_problems(edited)


def test_fourteenth_review_judges_the_audits_readers_and_the_totals_count_them():
    review = _load("static_precision_outside12_vllm_0.33.json")
    assert reader_problems(review) == []
    assert review["totals"]["audit_reader"] == {"right": 37, "weak": 3, "wrong": 0}
    weak = sorted((r["file"].rsplit("/", 1)[-1], r["line"]) for r in review["items"]
                  if r["audit_reader_verdict"] == "weak")
    assert weak == [("fused_moe_modular_method.py", 98), ("inc_wna16_moe.py", 185),
                    ("prepared.py", 153)]
    # canary: a verdict turned wrong no longer matches the published totals
    edited = copy.deepcopy(review)
    next(r for r in edited["items"] if r["audit_reader_verdict"] == "right")[
        "audit_reader_verdict"] = "wrong"
    assert reader_problems(edited)
