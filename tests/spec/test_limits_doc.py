"""The bounds table of docs/spec-language.md ("Bounds on untrusted input") gives the defaults of
``derivgraph.limits.Limits`` and their environment variables; nothing compared the two before.
"""

from __future__ import annotations

import dataclasses
import os
import re
from pathlib import Path

import derivgraph.limits as limits_module
from derivgraph.limits import Limits

DOC = Path(__file__).resolve().parents[2] / "docs" / "spec-language.md"

ROWS = {  # the table's first column -> the Limits field it documents
    "spec file size": "max_file_bytes",
    "YAML nodes after alias expansion": "max_yaml_nodes",
    "YAML flow nesting": "max_yaml_depth",
    "formula length": "max_formula_chars",
    "brackets + runs of unary operators": "max_nesting",
    "formula tree depth": "max_ast_depth",
    "path segments (`owner`, `object`, ...)": "max_path_parts",
    "integer constants and folded integers": "max_int_bits",
    "strings and folded strings": "max_string_chars",
    "folded lists": "max_sequence_items",
    "elements of one tensor": "max_numel",
    "bytes of one tensor (intermediates too)": "max_tensor_bytes",
    "bytes one spec file allocates": "max_file_alloc_bytes",
    "bytes allocated for one model": "max_model_alloc_bytes",
    "derived entries in one spec file": "max_derived_per_file",
    "nested `each()` comprehensions": "max_each_nesting",
}
_UNITS = {"KiB": 1 << 10, "GiB": 1 << 30}


def parse_default(cell: str) -> tuple[int, str | None]:
    """A default cell and its variable: ``2 GiB (`DERIVGRAPH_MAX_TENSOR_BYTES`)`` is
    ``(2 << 30, "DERIVGRAPH_MAX_TENSOR_BYTES")``."""
    env = re.search(r"`(DERIVGRAPH_\w+)`", cell)
    m = re.match(r"(\d+)\^(\d+)|([\d,]+)\s*(KiB|GiB)?", cell.strip())
    assert m, cell
    value = int(m.group(1)) ** int(m.group(2)) if m.group(1) else \
        int(m.group(3).replace(",", "")) * _UNITS.get(m.group(4) or "", 1)
    return value, env.group(1) if env else None


def documented(text: str) -> dict[str, tuple[int, str | None]]:
    table = text.split("### Bounds on untrusted input", 1)[1].split("\n\n", 2)[2]
    rows = {}
    for line in table.split("\n\n", 1)[0].splitlines()[2:]:
        bound, default = (c.strip() for c in line.strip("|").split("|")[:2])
        if bound in ROWS:
            rows[ROWS[bound]] = parse_default(default)
    return rows


def problems(text: str) -> list[str]:
    rows = documented(text)
    source = Path(limits_module.__file__).read_text(encoding="utf-8")
    out = [f"{f}: no row" for f in ROWS.values() if f not in rows]
    for field in dataclasses.fields(Limits):
        if field.name not in rows:
            out.append(f"{field.name}: a bound the table does not list")
            continue
        value, env = rows[field.name]
        if env is not None and f'"{env}"' not in source:
            out.append(f"{field.name}: {env} is not read by derivgraph.limits")
        if env is not None and env in os.environ:
            continue  # this run's default comes from the environment
        if field.default != value:
            out.append(f"{field.name}: the doc says {value}, the default is {field.default}")
    return out


def test_the_bounds_table_gives_every_default() -> None:
    assert problems(DOC.read_text(encoding="utf-8")) == []


def test_a_changed_default_or_a_wrong_variable_is_found() -> None:
    text = DOC.read_text(encoding="utf-8")
    assert problems(text.replace("| formula length | 4,096 characters |",
                                 "| formula length | 8,192 characters |")) == [
        "max_formula_chars: the doc says 8192, the default is 4096"]
    assert problems(text.replace("`DERIVGRAPH_MAX_FILE_BYTES`", "`DERIVGRAPH_MAX_SPEC_BYTES`")) \
        == ["max_file_alloc_bytes: DERIVGRAPH_MAX_SPEC_BYTES is not read by derivgraph.limits"]
    assert parse_default("512 KiB") == (512 << 10, None)
