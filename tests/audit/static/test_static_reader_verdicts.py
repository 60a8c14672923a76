"""The outside reviews' reader verdicts carried onto the current report
(``tests/resources/static_reader_verdicts.py``): the rule on a small file, then the figures the
README and BENCHMARKS quote for the thirteenth and fourteenth reviews."""

from __future__ import annotations

import json

import pytest

from tests.resources import static_reader_agreement as agreement
from tests.resources import static_reader_verdicts as verdicts

_SOURCE = ("def f(self, x):\n"        # 1
           "    if self.s is None:\n"  # 2
           "        return x\n"        # 3
           "    y = kernel(x,\n"       # 4
           "               self.s)\n"  # 5
           "    return other(y)\n")    # 6


def _item(verdict: str, judged_line: int, quote_line: int) -> dict:
    return {"index": "0", "file": "pkg/m.py", "line": "9", "attr": "s",
            "audit_reader": f"kernel-call pkg/m.py:{judged_line} in C.f: text",
            "audit_reader_verdict": verdict, "reader_quote": f"pkg/m.py:{quote_line}: text"}


def _reader(line: int) -> str:
    return f"kernel-call pkg/m.py:{line} in C.f: text"


@pytest.fixture
def root(tmp_path):
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "m.py").write_text(_SOURCE)
    return tmp_path


@pytest.mark.parametrize(("verdict", "judged", "quote", "now", "expected"), [
    # the same statement as judged (line 5 is inside the call of line 4): the verdict stands
    ("weak", 2, 4, _reader(2), ("weak", "kept")),
    ("wrong", 4, 6, _reader(5), ("wrong", "kept")),
    # moved onto the judge's own statement: right, whatever the judge said of the old reader
    ("wrong", 6, 4, _reader(5), ("right", "moved to the judge's line")),
    # moved to a line nobody judged: not counted right, even if the old one was right
    ("right", 4, 4, _reader(6), ("unjudged", "moved elsewhere")),
    # an if's header never joins its body
    ("right", 3, 3, _reader(2), ("unjudged", "moved elsewhere")),
    (None, 4, 4, None, ("lost", "no reader")),
])
def test_each_case_of_the_published_rule(root, verdict, judged, quote, now, expected):
    assert verdicts.carried_verdict(_item(verdict, judged, quote), now, root) == expected


def test_recount_matches_sites_by_file_line_and_attribute(root):
    sample = {"items": [_item("weak", 2, 4), {**_item("right", 4, 4), "attr": "t"}]}
    findings = [{"file": "pkg/m.py", "line": 9, "attr": "s", "reader": _reader(4)},
                {"file": "pkg/m.py", "line": 10, "attr": "t", "reader": _reader(4)}]
    got = verdicts.recount(sample, findings, root)
    # the first moved to the judge's line; the second's finding sits on another line: lost
    assert [r["verdict"] for r in got["items"]] == ["right", "lost"]
    assert got["totals"] == {"right": 1, "weak": 0, "wrong": 0, "unjudged": 0, "lost": 1}


@pytest.mark.vllm
@pytest.mark.slow
def test_the_thirteenth_and_fourteenth_reviews_recounted(vllm_report):
    root = agreement.vllm_root()
    findings = [f.as_json() for f in vllm_report.findings]

    def recount(name: str) -> dict:
        path = agreement.HERE / f"static_precision_{name}_vllm_0.33.json"
        return verdicts.recount(json.loads(path.read_text()), findings, root)

    thirteenth, fourteenth = recount("outside11"), recount("outside12")
    # as judged: 30 right, 5 weak, 5 wrong; 37 right, 3 weak, 0 wrong
    assert thirteenth["totals"] == {"right": 36, "weak": 3, "wrong": 1, "unjudged": 0, "lost": 0}
    moved = {r["index"] for r in thirteenth["items"] if r["how"] != "kept"}
    assert moved == {11, 12, 15, 19, 22, 37}
    # item 19 (the gfx942 MXFP4 config): its bound class hands the whole config to
    # rocm_aiter_fused_experts, whose default path reads the field on the judge's line
    assert [(r["verdict"], r["how"]) for r in thirteenth["items"] if r["index"] == 19] == [
        ("right", "moved to the judge's line")]
    assert fourteenth["totals"] == {"right": 39, "weak": 1, "wrong": 0, "unjudged": 0, "lost": 0}
    # item 5 (Elastic-EP): the getter no caller consumes ranks after the judge's read
    assert {r["index"] for r in fourteenth["items"] if r["how"] != "kept"} == {5, 9}
