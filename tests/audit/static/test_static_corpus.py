"""The static audit on the hand-written corpus: exact findings, markers, and spec matching.

Expected findings live in ``expectations.py``; the corpus files also mark each site with
``# expect: CATEGORY`` and a test checks both agree.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from derivgraph.audit.static.scan import scan
from derivgraph.audit.static.sites import CATEGORIES
from derivgraph.spec.load import load_spec_text, load_specs
from tests.audit.static.expectations import CORPUS, DECLARED, EXPECTED, SPECS


def _by_file(report) -> dict[str, set[tuple[int, str, str]]]:
    out: dict[str, set[tuple[int, str, str]]] = {}
    for f in report.findings:
        out.setdefault(Path(f.file).name, set()).add((f.line, f.attr, f.category))
    return out


# ---- the corpus ---------------------------------------------------------------------------------

@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_corpus_findings_are_exactly_the_expected_ones(corpus_report, name):
    assert _by_file(corpus_report).get(name, set()) == EXPECTED[name]


def test_corpus_has_no_other_files_with_findings(corpus_report):
    assert set(_by_file(corpus_report)) == set(EXPECTED)
    assert corpus_report.errors == []


def test_every_category_is_exercised():
    seen = {cat for sites in EXPECTED.values() for _, _, cat in sites}
    assert seen == set(CATEGORIES)


def test_expectations_agree_with_the_corpus_markers():
    marker = re.compile(r"# expect: ([a-z-]+)(?: declared)?(?: x(\d))?$")
    for name, expected in EXPECTED.items():
        counts: dict[tuple[int, str], int] = {}
        for line, _, cat in expected:
            counts[(line, cat)] = counts.get((line, cat), 0) + 1
        marked = {}
        for i, text in enumerate((CORPUS / name).read_text().splitlines(), 1):
            m = marker.search(text)
            if m:
                marked[(i, m.group(1))] = int(m.group(2) or 1)
        assert marked == counts, name


def test_in_place_writes_and_locals_are_not_sites_unless_folds(corpus_report):
    found = {f.line: f.category for f in corpus_report.findings
             if f.file.endswith("quant_method.py")}
    text = (CORPUS / "quant_method.py").read_text().splitlines()
    in_place = [i for i, t in enumerate(text, 1)
                if any(op in t for op in (".copy_(", "out=", ".fill_(", ".mul_(", "*= 0.5",
                                          "[0] = 1.0", "local_copy ="))]
    assert len(in_place) == 8
    # copy_ of its own max, mul(out=itself), mul_, *=: folds; fill_, [0] =, a local: nothing.
    assert {i: found[i] for i in in_place if i in found} == {
        46: "fold", 47: "fold", 49: "fold", 51: "fold"}


def test_findings_carry_class_function_and_reach(corpus_report):
    f = next(f for f in corpus_report.findings if f.attr == "consts" and
             f.file.endswith("transitive.py"))
    assert f.cls is None and f.function == "_make_consts"
    assert f.via == ("W8A8StyleLinearMethod.process_weights_after_loading",
                     "W8A8StyleLinearMethod._setup", "_make_consts")
    f = next(f for f in corpus_report.findings if f.attr == "ab_strides1")
    assert (f.cls, f.function, f.owner, f.kind) == (
        "CutlassStyleExperts", "CutlassStyleExperts.__init__", "self", "attribute")
    assert "torch.full" in f.reason
    alias = next(f for f in corpus_report.findings if f.attr == "c_strides2")
    assert "self.ab_strides1" in alias.reason and alias.kind == "alias"


# ---- matching against specs ---------------------------------------------------------------------

def test_declared_sites_match_specs_by_class_base_subclass_root_name_and_object_graph():
    report = scan([CORPUS / "declared.py"], specs=load_specs([SPECS / "declared.yaml"]), jobs=1)
    got = {(f.line, f.attr): f.spec for f in report.declared()}
    assert got == DECLARED
    assert {(f.line, f.attr) for f in report.undeclared()} == {
        (17, "undeclared_const"), (28, "other_inv")}
    assert all(f.suggestion is None for f in report.declared())
    assert all(f.suggestion for f in report.undeclared())


def test_a_spec_for_another_class_does_not_declare():
    text = """version: 1
specs:
  - name: other-class
    target: {quant_method_class: SomeOtherMethod}
    derived:
      - {name: other_inv, kind: attribute, formula: reciprocal(input_scale)}
"""
    report = scan([CORPUS / "declared.py"], specs=load_spec_text(text), jobs=1)
    assert not report.declared()


def test_suggestions_are_loadable_spec_skeletons(corpus_report):
    # Fold skeletons use `kind: fold`, which the spec schema learns in issue 12's branch.
    folds = [f for f in corpus_report.findings if not f.declared and f.category == "fold"]
    assert folds and all("kind: fold" in f.suggestion for f in folds)
    und = [f for f in corpus_report.undeclared() if f.category != "fold"]
    assert all("owner: \"TODO\"" not in f.suggestion for f in und)
    text = "version: 1\nspecs:\n" + "\n".join(
        "\n".join("  " + line for line in f.suggestion.splitlines()) for f in und)
    specs = load_spec_text(text)
    assert len(specs) == len(und)
    canary = next(s for s, f in zip(specs, und) if f.attr == "canary_strides")
    assert canary.target.object_class == ["CanaryExperts"]
    assert canary.target.object == "quant_method.moe_kernel.fused_experts"
    d = canary.derived[0]
    assert (d.name, d.owner, d.kind, d.formula) == (
        "canary_strides", "quant_method.moe_kernel.fused_experts", "attribute",
        "full((e,), 7, dtype=int64)")
    alias = next(s for s, f in zip(specs, und) if f.attr == "c_strides2")
    assert (alias.derived[0].kind, alias.derived[0].of) == ("alias", "ab_strides1")
    helper = next(s for s, f in zip(specs, und) if f.attr == "consts"
                  and f.file.endswith("transitive.py"))
    assert helper.target.quant_method_class == ["W8A8StyleLinearMethod"]


# ---- scanning without importing ------------------------------------------------------------------
