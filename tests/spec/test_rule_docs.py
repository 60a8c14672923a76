"""Every rule code is documented: docs/spec-language.md has one table row per ``Rule``.

README.md sends readers to docs/spec-language.md for the error codes; a code the library raises
but the page never names (DG030, DG031, DG060-DG063 and DG083 were missing) leaves a user with a
code and no meaning.
"""

from __future__ import annotations

import re
from pathlib import Path

from derivgraph.errors import Rule

DOC = Path(__file__).resolve().parents[2] / "docs" / "spec-language.md"
_ROW = re.compile(r"^\| (DG\d{3} [a-z-]+) \|", re.MULTILINE)


def documented_rules(text: str) -> list[str]:
    """The ``DGnnn slug`` of every rules-table row of a markdown text, in order."""
    return _ROW.findall(text)


def undocumented(text: str) -> list[str]:
    """Rules with no row of their own (exact code and slug) in ``text``."""
    rows = set(documented_rules(text))
    return [str(rule) for rule in Rule if str(rule) not in rows]


def test_every_rule_has_one_row_in_the_spec_language_doc() -> None:
    text = DOC.read_text(encoding="utf-8")
    assert undocumented(text) == []
    rows = documented_rules(text)
    assert len(rows) == len(set(rows)), "a rule documented twice"
    assert set(rows) == {str(rule) for rule in Rule}, "a row names no rule of derivgraph.errors"


def test_a_missing_or_misspelt_row_is_found() -> None:
    """Canary: dropping a row, or changing its slug, turns the check red."""
    text = DOC.read_text(encoding="utf-8")
    dropped = re.sub(r"^\| DG083 engine-refolded \|.*\n", "", text, flags=re.MULTILINE)
    assert undocumented(dropped) == ["DG083 engine-refolded"]
    misspelt = text.replace("| DG030 pass-fault |", "| DG030 pass-error |")
    assert undocumented(misspelt) == ["DG030 pass-fault"]
