"""The outside reviewers' file-draw recall lists (v14, v14b; v15 to v18, each by two judges)
agree with their seed, draw and source.

A file draw samples vLLM source files (``tests/resources/static_recall_file_draw.py``, seed
committed first); the reviewer then lists every real site in the drawn files. Each row checks:
the draw is what the committed script prints for the published seed; the judged list reads
exactly the drawn files in order and lists sites only in them; every verdict has a reason and
quotes of the installed source; the published counts follow from the verdicts; ``held_out`` is
false exactly for the sites of an earlier list; the recall result counts the list's real sites.
v15's to v18's two judges each read the same draw without seeing each other's work; the
agreement the review publishes (the same real sites; for v18 all but one statement judge D lists
apart) is checked from their two lists. Each check
has a canary.
"""

from __future__ import annotations

import copy
import json
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.audit.static.test_static_outside_review import _load, _vllm_parent, quote_matches

RESOURCES = Path(__file__).resolve().parents[2] / "resources"


@dataclass(frozen=True)
class FileDraw:
    """One file-draw recall list and the figures its review published."""

    stage: str
    population_flag: tuple[str, ...]
    population: int
    files: int
    real: int
    held_out_real: int
    found: int
    draw_stage: str = ""  # the seed and draw's stage when judges share one (v15a, v15b: v15)

    def load(self, kind: str) -> dict:
        drawn = self.draw_stage or self.stage
        name = {"seed": f"static_recall_file_seed_{drawn}.json",
                "draw": f"static_recall_file_{drawn}_draw.json",
                "list": f"static_recall_outside_{self.stage}_vllm_0.33.json",
                "result": f"static_recall_outside_result_{self.stage}_vllm_0.33.json"}[kind]
        return _load(name)


ROWS = [FileDraw("v14", (), 160, 12, 8, 2, 7),
        FileDraw("v14b", ("--population", "untouched"), 216, 15, 0, 0, 0),
        FileDraw("v15a", ("--population", "v15"), 144, 15, 26, 16, 23, "v15"),
        FileDraw("v15b", ("--population", "v15"), 144, 15, 26, 16, 23, "v15"),
        FileDraw("v16d", ("--population", "v16"), 129, 15, 4, 3, 3, "v16"),
        FileDraw("v16e", ("--population", "v16"), 129, 15, 4, 3, 3, "v16"),
        FileDraw("v17f", ("--population", "v17"), 114, 20, 22, 6, 20, "v17"),
        FileDraw("v17g", ("--population", "v17"), 114, 20, 22, 6, 20, "v17"),
        FileDraw("v18d", ("--population", "v18"), 94, 20, 5, 2, 5, "v18"),
        FileDraw("v18e", ("--population", "v18"), 94, 20, 4, 1, 4, "v18")]
IDS = [r.stage for r in ROWS]


def _earlier_keys(excluded: list[str]) -> list[tuple[str, int, str]]:
    keys = []
    for name in excluded:
        if not name.startswith("static_recall_outside_"):
            continue
        for body in _load(name)["lists"].values():
            keys += [(c["file"], c["line"], c["attr"]) for c in body["candidates"]]
    return keys


def list_problems(row: FileDraw, lists: dict, draw: dict, seed: dict) -> list[str]:
    """What is wrong with a judged file-draw list (empty when consistent)."""
    out = []
    if (lists["seed"], lists["n"], draw["seed"], draw["n"]) != (seed["seed"], seed["n"]) * 2:
        out.append("seed or n differ from the published seed file")
    (name, body), = lists["lists"].items()
    if body["drawn"] != draw["drawn"] or lists["judged_files"] != draw["drawn"][:lists["judged"]]:
        out.append("the judged files are not a prefix of the drawn order")
    if (body["population"], draw["population"], len(draw["drawn"])) != (
            row.population, row.population, row.files):
        out.append("population or number of files differ")
    cands = body["candidates"]
    if any(c["file"] not in lists["judged_files"] for c in cands):
        out.append("a site outside the judged files")
    if any(not (isinstance(c["real"], bool) and c["why"] and c["quotes"]) for c in cands):
        out.append("a site without a verdict, reason or quote")
    real = [c for c in cands if c["real"]]
    if (body["real"], len(real), body["held_out_real"]) != (
            row.real, row.real, sum(c["held_out"] for c in real)):
        out.append("the real counts do not follow from the verdicts")
    earlier = _earlier_keys(lists["excluded"]["files"] if isinstance(lists["excluded"], dict)
                            else lists["excluded"])
    for c in cands:
        seen = any(f == c["file"] and a == c["attr"] and abs(ln - c["line"]) <= 3
                   for f, ln, a in earlier)
        if c["held_out"] == seen:
            out.append(f"{c['file']}:{c['line']} {c['attr']}: held_out is {c['held_out']}")
    return out


@pytest.mark.parametrize("row", ROWS, ids=IDS)
def test_file_draw_list_is_the_judged_draw(row: FileDraw):
    lists, draw, seed = row.load("list"), row.load("draw"), row.load("seed")
    assert list_problems(row, lists, draw, seed) == []
    assert sum(c["held_out"] for c in lists["lists"][next(iter(lists["lists"]))]["candidates"]
               if c["real"]) == row.held_out_real
    # canaries: another seed, a site moved to an undrawn file, a flipped held_out, a flipped verdict
    body = next(iter(lists["lists"]))
    other = dict(seed, seed=seed["seed"] + 1)
    assert list_problems(row, lists, draw, other)
    moved = copy.deepcopy(lists)
    moved["lists"][body]["candidates"][0]["file"] = "vllm/not_drawn.py"
    assert list_problems(row, moved, draw, seed)
    flipped = copy.deepcopy(lists)
    flipped["lists"][body]["candidates"][0]["held_out"] ^= True
    assert list_problems(row, flipped, draw, seed)
    verdict = copy.deepcopy(lists)
    verdict["lists"][body]["candidates"][0]["real"] ^= True
    assert list_problems(row, verdict, draw, seed)


@pytest.mark.parametrize("row", ROWS, ids=IDS)
def test_file_draw_result_counts_the_lists_real_sites(row: FileDraw):
    result, lists = row.load("result"), row.load("list")
    if row.real == 0:  # the measure script lists only lists with a real site to count
        assert result["lists"] == {}
        return
    (name, body), = result["lists"].items()
    assert name in lists["lists"]
    assert (body["real"], body["found"], len(body["sites"])) == (row.real, row.found, row.real)
    assert sum(s["found"] for s in body["sites"]) == row.found


@pytest.mark.parametrize("row", ROWS, ids=IDS)
def test_file_draw_quotes_are_the_installed_source(row: FileDraw):
    root = _vllm_parent()
    if root is None:
        pytest.skip("vLLM is not installed")
    quotes = [q for b in row.load("list")["lists"].values() for c in b["candidates"]
              for q in c["quotes"]]
    assert quotes and [q for q in quotes if not quote_matches(q, root)] == []
    first = quotes[0]
    where, _, text = first.partition(" ")
    assert not quote_matches(f"{where} {text} # edited", root)


@pytest.mark.parametrize("row", ROWS, ids=IDS)
def test_file_draw_script_reprints_the_committed_draw(row: FileDraw):
    if _vllm_parent() is None:
        pytest.skip("vLLM is not installed")
    seed_file = RESOURCES / f"static_recall_file_seed_{row.draw_stage or row.stage}.json"
    out = subprocess.run([sys.executable, str(RESOURCES / "static_recall_file_draw.py"),
                          *row.population_flag, "--seed-file", str(seed_file)],
                         capture_output=True, text=True, check=True).stdout
    assert json.loads(out) == row.load("draw")


def _real_sites(lists: dict) -> set[tuple[str, int]]:
    return {(c["file"], c["line"]) for b in lists["lists"].values() for c in b["candidates"]
            if c["real"]}


@pytest.mark.parametrize(("first", "second", "real"), [("v15a", "v15b", 26), ("v16d", "v16e", 4),
                                                        ("v17f", "v17g", 22)])
def test_two_judges_of_one_draw_name_the_same_real_sites(first: str, second: str, real: int):
    a, b = (next(r for r in ROWS if r.stage == s).load("list") for s in (first, second))
    assert a["judged_files"] == b["judged_files"]
    assert len(_real_sites(a)) == real and _real_sites(a) == _real_sites(b)
    # canary: one verdict of judge B flipped makes the two sets differ
    flipped = copy.deepcopy(b)
    next(iter(flipped["lists"].values()))["candidates"][0]["real"] ^= True
    assert _real_sites(a) != _real_sites(flipped)


def test_v18_judges_differ_only_in_one_statement_listed_apart():
    """Judge D lists ``prefetch.py:707`` (a second store of ``_cpu_storage``, two lines after
    :705) as its own site; judge E counts it with :705. Every other real site is shared."""
    d, e = (next(r for r in ROWS if r.stage == s).load("list") for s in ("v18d", "v18e"))
    assert d["judged_files"] == e["judged_files"]
    extra = ("vllm/model_executor/offloader/prefetch.py", 707)
    assert _real_sites(d) - _real_sites(e) == {extra} and _real_sites(e) <= _real_sites(d)
    assert (extra[0], 705) in _real_sites(e)
    # canary: one more verdict of judge E flipped breaks the one-statement difference
    flipped = copy.deepcopy(e)
    first_real = next(c for c in next(iter(flipped["lists"].values()))["candidates"] if c["real"])
    first_real["real"] = False
    assert _real_sites(d) - _real_sites(flipped) != {extra}
