"""docs/specs.md lists the shipped library: one row per spec of ``specs/``, and the intro's
trace counts are the table's and the raw reproduction file's.

The page said "12 not traced" while 17 library specs have no trace verdict; nothing checked it.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "specs.md"
RAW = ROOT / "benchmarks" / "results" / "trace_reproduction.json"
_ROW = re.compile(r"^\| `([\w.-]+)` \(`[\w.]+`\) \|(.*)$", re.MULTILINE)
_COUNTS = re.compile(r"(\d+) reproduced, (\d+) not\b.*?(\d+) not traced", re.DOTALL)


def library_specs() -> set[str]:
    names: set[str] = set()
    for path in sorted((ROOT / "specs").glob("*.yaml")):
        names.update(s["name"] for s in yaml.safe_load(path.read_text(encoding="utf-8"))["specs"])
    return names


def rows(text: str) -> dict[str, str]:
    """Spec name -> its trace verdict (``reproduced``, ``not reproduced`` or ``not traced``)."""
    found: dict[str, str] = {}
    for name, rest in _ROW.findall(text):
        assert name not in found, f"{name} has two rows"
        verdict = re.search(r"traced: (not reproduced|reproduced)", rest)
        found[name] = verdict.group(1) if verdict else "not traced"
    return found


def count_problems(text: str) -> list[str]:
    """What the intro's counts get wrong about the table."""
    table = list(rows(text).values())
    m = _COUNTS.search(text)
    assert m, "the intro's counts are gone"
    said = dict(zip(("reproduced", "not reproduced", "not traced"), map(int, m.groups())))
    return [f"{k}: the intro says {v}, the table has {table.count(k)}"
            for k, v in said.items() if table.count(k) != v]


def test_one_row_per_library_spec() -> None:
    assert set(rows(DOC.read_text(encoding="utf-8"))) == library_specs()


def test_intro_counts_are_the_tables() -> None:
    assert count_problems(DOC.read_text(encoding="utf-8")) == []


def test_trace_verdicts_are_the_raw_files() -> None:
    raw = json.loads(RAW.read_text(encoding="utf-8"))["specs"]
    verdicts = rows(DOC.read_text(encoding="utf-8"))
    assert {n for n, v in verdicts.items() if v == "reproduced"} == \
        set(raw["reproduced"]) & library_specs()
    assert {n for n, v in verdicts.items() if v == "not reproduced"} == \
        set(raw["not_reproduced"]) & library_specs()


def test_a_wrong_count_or_a_missing_row_is_found() -> None:
    """Canaries: the old "12 not traced", and a row dropped from the table."""
    text = DOC.read_text(encoding="utf-8")
    assert count_problems(text.replace("17 not traced", "12 not traced")) == \
        ["not traced: the intro says 12, the table has 17"]
    dropped = re.sub(r"^\| `vllm-mla-absorbed-kv-b-proj` .*\n", "", text, flags=re.MULTILINE)
    assert library_specs() - set(rows(dropped)) == {"vllm-mla-absorbed-kv-b-proj"}
