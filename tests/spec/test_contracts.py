"""Contracts of the spec language's vocabulary: rule codes, kinds, errors and torch-freedom."""

from __future__ import annotations

import ast
import builtins
import re
import subprocess
import sys
from pathlib import Path

import pytest

import derivgraph.errors as errors_module
from derivgraph import DerivedTensor, Rule, SpecValidationError, load_spec_file
from derivgraph.errors import DerivgraphError, SpecIssue
from derivgraph.spec.check import check_specs
from derivgraph.spec.kinds import OpKind, TensorKind
from derivgraph.spec.schema import spec_schema

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "derivgraph"
ERRORS = PACKAGE / "errors.py"
SPEC_FILES = sorted([*(ROOT / "tests" / "resources" / "specs").glob("*.yaml"),
                     *(ROOT / "tests" / "fixtures" / "specs").glob("*.yaml")])


# ---- rules ------------------------------------------------------------------------------------

def test_rule_codes_and_slugs_are_unique_and_well_formed():
    members = list(Rule)
    assert len({r.code for r in members}) == len(members)
    assert len({r.slug for r in members}) == len(members)
    for rule in members:
        assert re.fullmatch(r"DG\d{3}", rule.code), rule
        assert re.fullmatch(r"[a-z]+(-[a-z]+)*", rule.slug), rule
        assert rule == f"{rule.code} {rule.slug}" and str(rule) == rule.value


def test_spec_issue_rule_is_a_rule_member():
    issue = SpecIssue("DG006 cycle", "m", "f")
    assert type(issue.rule) is Rule and issue.rule is Rule.CYCLE
    with pytest.raises(ValueError):
        SpecIssue("DG999 made-up", "m", "f")


def _issues(path: Path) -> list[SpecIssue]:
    try:
        return check_specs(load_spec_file(path))
    except SpecValidationError as exc:
        return exc.issues


def test_validate_reports_rule_members():
    """Every issue ``validate`` reports for the broken corpus carries a :class:`Rule` member."""
    seen = [i for path in SPEC_FILES for i in _issues(path)]
    assert len({i.rule for i in seen}) >= 10  # the corpus exercises many rules
    assert all(type(i.rule) is Rule for i in seen), {i.rule for i in seen
                                                      if type(i.rule) is not Rule}


def test_no_literal_rule_strings_outside_errors():
    pattern = re.compile(r"""["']DG\d{3} [a-z]""")
    hits = [f"{p.relative_to(ROOT)}:{n}"
            for top in ("derivgraph", "vllm_integration")
            for p in sorted((ROOT / top).rglob("*.py")) if p != ERRORS
            for n, line in enumerate(p.read_text("utf-8").splitlines(), 1)
            if pattern.search(line)]
    assert hits == [], "use derivgraph.errors.Rule members, not their strings"


# ---- kinds ------------------------------------------------------------------------------------

def test_derived_tensor_kind_is_a_tensor_kind():
    d = DerivedTensor(name="x", kind="view", formula="w[0]")
    assert d.kind is TensorKind.VIEW
    assert d.model_dump(mode="json")["kind"] == "view"
    assert type(d.model_dump(mode="json")["kind"]) is str


def test_schema_lists_kinds_as_an_enum_of_strings():
    schema = spec_schema()
    prop = schema["$defs"]["DerivedTensor"]["properties"]["kind"]
    target = prop
    if "$ref" in prop:
        target = schema["$defs"][prop["$ref"].rsplit("/", 1)[1]]
    assert target["type"] == "string"
    assert target["enum"] == [k.value for k in TensorKind]


def test_spec_and_ops_compare_no_kind_against_a_bare_string():
    kinds = {k.value for k in (*TensorKind, *OpKind)}
    hits = []
    for top in ("spec", "ops"):
        for path in sorted((PACKAGE / top).rglob("*.py")):
            for node in ast.walk(ast.parse(path.read_text("utf-8"))):
                if not isinstance(node, ast.Compare):
                    continue
                sides = [node.left, *node.comparators]
                reads_kind = any(isinstance(s, ast.Attribute) and s.attr == "kind"
                                 for s in sides)
                literals = [c.value for s in sides for c in ast.walk(s)
                            if isinstance(c, ast.Constant) and isinstance(c.value, str)]
                if reads_kind and any(v in kinds for v in literals):
                    hits.append(f"{path.relative_to(ROOT)}:{node.lineno}")
    assert hits == [], "compare against TensorKind / OpKind members"


# ---- exceptions -------------------------------------------------------------------------------

def _defined_exceptions() -> dict[str, list[str]]:
    """Exception classes defined in derivgraph/, by name -> files (by AST: no imports)."""
    known = {n for n in dir(builtins) if isinstance(getattr(builtins, n), type)
             and issubclass(getattr(builtins, n), BaseException)}
    classes: list[tuple[str, list[str], str]] = []
    for path in sorted(PACKAGE.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text("utf-8"))):
            if isinstance(node, ast.ClassDef):
                bases = [b.attr if isinstance(b, ast.Attribute) else getattr(b, "id", "")
                         for b in node.bases]
                classes.append((node.name, bases, str(path.relative_to(ROOT))))
    found: dict[str, list[str]] = {}
    changed = True
    while changed:  # a class is an exception if one of its bases is
        changed = False
        for name, bases, file in classes:
            if any(b in known for b in bases) and file not in found.get(name, []):
                found.setdefault(name, []).append(file)
                known.add(name)
                changed = True
    return found


def test_every_exception_lives_in_errors_and_derives_from_derivgraph_error():
    found = _defined_exceptions()
    assert "SpecValidationError" in found  # the scan sees errors.py
    elsewhere = {n: f for n, f in found.items() if f != ["derivgraph/errors.py"]}
    assert elsewhere == {}, "define exceptions in derivgraph/errors.py"
    for name in found:
        cls = getattr(errors_module, name)
        assert issubclass(cls, DerivgraphError), name
        assert name in errors_module.__all__, name


# ---- torch-free spec tooling ------------------------------------------------------------------

def test_spec_tooling_imports_no_torch():
    code = ("import derivgraph, derivgraph.spec.check, derivgraph.spec.load, "
            "derivgraph.spec.schema; import sys; "
            "assert 'torch' not in sys.modules, 'torch imported'")
    proc = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True,
                          text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
