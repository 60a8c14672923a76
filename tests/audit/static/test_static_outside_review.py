"""The outside review's files are self-consistent: seeds published first, totals, quotes.

The precision sample (static_precision_outside_vllm_0.33.json) must carry the published seed and
size, verdicts that add up to its totals and Wilson intervals, and reader quotes that are the
installed vLLM 0.33.0 source at the quoted line. The held-out recall lists must carry their
published seeds, a verdict for every candidate, and a result file counting exactly their real
sites.
"""

from __future__ import annotations

import importlib.util
import json
import math
from pathlib import Path

import pytest

RESOURCES = Path(__file__).resolve().parents[2] / "resources"


def _load(name: str) -> dict:
    return json.loads((RESOURCES / name).read_text(encoding="utf-8"))


def _wilson(k: int, n: int, z: float = 1.959964) -> list[float]:
    p, d = k / n, 1 + z * z / n
    c, h = (p + z * z / (2 * n)) / d, z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / d
    return [round(c - h, 4), round(c + h, 4)]


def _vllm_parent() -> Path | None:
    spec = importlib.util.find_spec("vllm")
    return None if spec is None or spec.origin is None else Path(spec.origin).parents[1]


def quote_matches(reader: str, root: Path) -> bool:
    """Whether ``"vllm/x.py:N text"`` (or ``"vllm/x.py:N: text"``) quotes line N of the
    installed file verbatim."""
    where, _, text = reader.partition(" ")
    path, _, line = where.removesuffix(":").rpartition(":")
    lines = (root / path).read_text(encoding="utf-8").splitlines()
    return 0 < int(line) <= len(lines) and lines[int(line) - 1].strip() == text.strip()


def test_precision_sample_uses_the_published_seed_and_adds_up():
    review = _load("static_precision_outside_vllm_0.33.json")
    seed = _load("static_precision_seed_outside.json")
    assert review["seed"] == seed["seed"] and review["n"] == seed["n"] == len(review["sample"])
    verdicts = [r["verdict"] for r in review["sample"]]
    assert set(verdicts) <= {"TP", "FP"}
    t = review["totals"]
    assert t["tp"] == verdicts.count("TP") and t["fp"] == verdicts.count("FP")
    strict = [r for r in review["sample"] if r["verdict"] == "TP" and r["derives_from"] != "none"]
    strictest = [r for r in strict if r["derives_from"] == "weight"]
    assert t["strict_tp"] == len(strict) and t["strictest_tp"] == len(strictest)
    n = len(verdicts)
    assert t["wilson95"] == _wilson(t["tp"], n)
    assert t["strict_wilson95"] == _wilson(t["strict_tp"], n)
    assert t["strictest_wilson95"] == _wilson(t["strictest_tp"], n)
    assert all(r["why"] and r["derives_from"] in {"weight", "checkpoint-scale", "none"}
               for r in review["sample"])


def test_precision_reader_quotes_are_the_installed_source():
    root = _vllm_parent()
    if root is None:
        pytest.skip("vLLM is not installed")
    review = _load("static_precision_outside_vllm_0.33.json")
    bad = [r["reader"] for r in review["sample"] if not quote_matches(r["reader"], root)]
    assert bad == []


def test_quote_check_goes_red_on_a_shifted_line(tmp_path):
    (tmp_path / "vllm").mkdir()
    (tmp_path / "vllm" / "m.py").write_text("a = 1\nreader(self.x)\n", encoding="utf-8")
    assert quote_matches("vllm/m.py:2 reader(self.x)", tmp_path)
    assert not quote_matches("vllm/m.py:1 reader(self.x)", tmp_path)
    assert not quote_matches("vllm/m.py:9 reader(self.x)", tmp_path)


@pytest.mark.parametrize("stage,seed_file", [("v1", "static_recall_outside_seed.json"),
                                             ("v2", "static_recall_outside_seed_v2.json")])
def test_recall_lists_use_the_published_seeds_and_are_judged(stage, seed_file):
    lists = _load(f"static_recall_outside_{stage}_vllm_0.33.json")
    seed = _load(seed_file)
    assert lists["seed"] == seed["seed"] and lists["n"] == seed["n"]
    for body in lists["lists"].values():
        assert len(body["candidates"]) == seed["n"]
        assert all(isinstance(c["real"], bool) and c["why"] for c in body["candidates"])
        assert body["real"] == sum(c["real"] for c in body["candidates"])


def test_recall_result_counts_exactly_the_real_sites():
    result = _load("static_recall_outside_result_vllm_0.33.json")
    real = {}
    for stage in ("v1", "v2"):
        for name, body in _load(f"static_recall_outside_{stage}_vllm_0.33.json")["lists"].items():
            real.setdefault(name, set()).update(
                (c["file"], c["line"], c["attr"]) for c in body["candidates"] if c["real"])
    for name, body in result["lists"].items():
        assert {(s["file"], s["line"], s["attr"]) for s in body["sites"]} == real[name]
        assert body["found"] == sum(s["found"] for s in body["sites"])
        assert body["wilson95"] == _wilson(body["found"], body["real"])
