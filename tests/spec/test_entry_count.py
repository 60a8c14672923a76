"""DG016's count of derived entries, read from the YAML event stream before anything is built,
equals the count on the loaded data for every spec file we ship or test with, and refuses the
4,000-entry hostile file at its ``specs:`` line."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from derivgraph.errors import Rule, SpecValidationError
from derivgraph.spec.load import derived_entry_count, load_spec_file

ROOT = Path(__file__).resolve().parents[2]
FILES = sorted([*ROOT.glob("specs/*.yaml"), *ROOT.glob("tests/fixtures/**/*.yaml"),
                *ROOT.glob("examples/**/*.yaml"), *ROOT.glob("derivgraph/tools/specs/*.yaml"),
                *ROOT.glob("vllm_integration/*.yaml")])


def _data_count(text: str) -> int | None:
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError:
        return None
    specs = data.get("specs") if isinstance(data, dict) else None
    if not isinstance(specs, list):
        return 0
    return sum(len(s["derived"]) for s in specs
               if isinstance(s, dict) and isinstance(s.get("derived"), list))


@pytest.mark.parametrize("path", FILES, ids=lambda p: str(p.relative_to(ROOT)))
def test_event_count_equals_the_data_count(path: Path) -> None:
    text = path.read_text(errors="replace")
    if len(text) > 600_000:
        pytest.skip("over the file-size limit: refused before any count")
    expected = _data_count(text)
    if expected is None:
        pytest.skip("not valid YAML: refused by the parser")
    assert derived_entry_count(text)[0] == expected


def test_flow_style_aliases_and_nested_keys_count_like_the_data() -> None:
    text = """version: 1
specs:
  - name: a
    derived: [{name: x, formula: "w"}, {name: y, formula: "w"}]
    params: {derived: [1, 2, 3]}
  - &b
    name: b
    derived:
      - &one {name: z, formula: "w"}
      - *one
  - {derived: []}
other: {specs: [{derived: [1, 2, 3, 4]}]}
"""
    assert derived_entry_count(text) == (_data_count(text), 3) == (4, 3)  # the first "-"


def test_the_4000_entry_file_is_refused_at_its_specs_line() -> None:
    path = ROOT / "tests/fixtures/hostile/derived_4000.yaml"
    with pytest.raises(SpecValidationError) as info:
        load_spec_file(path)
    (issue,) = info.value.issues
    assert issue.rule is Rule.RESOURCE_LIMIT and "4000 derived" in issue.message
    specs_line = next(i for i, line in enumerate(path.read_text().splitlines(), 1)
                      if line.startswith("specs:"))
    assert issue.location.line == specs_line + 1
