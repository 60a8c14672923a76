"""Severity under vLLM 0.33's reload semantics, the refinement rules, and verdicts of the
executable audit applied to the static report.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

from derivgraph.audit.static.scan import scan
from derivgraph.cli import main
from derivgraph.spec.load import load_spec_text
from tests.audit.static.expectations import CORPUS, REFINED, REVIEW_FIXES, SEVERITIES

# ---- severity: vLLM 0.33's reload semantics -----------------------------------------------------

def test_severity_follows_the_engine_rule_table(corpus_report):
    got = {(f.line, f.attr): (f.severity.value, f.store) for f in corpus_report.findings
           if f.file.endswith("severity_cases.py")}
    assert got == SEVERITIES
    from derivgraph.audit.static.semantics import VLLM_0_33, Severity, Store

    assert {s for s, r in VLLM_0_33.items() if r.survives} == {
        Store.LAYER_PARAMETER, Store.PLACEHOLDER, Store.VIEW_OF_KEPT, Store.NOT_FROM_WEIGHTS,
        Store.INITIAL_LOAD_KEPT, Store.BUILT_AT_CONSTRUCTION, Store.MODEL_LOAD_KEPT}
    assert all(r.severity is Severity.INFO for r in VLLM_0_33.values() if r.survives)
    assert set(VLLM_0_33) == set(Store)


def test_views_weight_free_values_and_initial_load_code_are_refined(corpus_report):
    got = {(f.line, f.attr): (f.severity.value, f.store) for f in corpus_report.findings
           if f.file.endswith("reload_refinements.py")}
    assert got == REFINED


def test_causes_of_the_seed_2611_false_positives_are_fixed_next_to_true_positives(
        corpus_report):
    got = {(f.line, f.attr): (f.severity.value, f.store) for f in corpus_report.findings
           if f.file.endswith("review_fixes.py")}
    assert got == REVIEW_FIXES


def test_set_storage_into_a_declared_fused_tensor_is_declared_by_its_spec():
    text = """version: 1
specs:
  - name: fused-compressor
    target: {module_class: FusedCompressorAttention}
    derived:
      - {name: _fused_compressor_weight, kind: buffer, formula: "cat([a, b], 0)"}
"""
    report = scan([CORPUS / "review_fixes.py"], specs=load_spec_text(text), jobs=1)
    got = {(f.line, f.attr): f.spec for f in report.declared()}
    assert got == {(56, "weight"): "fused-compressor", (57, "weight"): "fused-compressor",
                   (58, "_fused_compressor_weight"): "fused-compressor"}
    # the layer-hook fusion stores its fused tensor nowhere: the spec does not reach it
    assert (64, "weight") in {(f.line, f.attr) for f in report.undeclared()}


def test_construction_sites_name_the_enclosing_class_and_outermost_function():
    from derivgraph.audit.static.construction import built_at_construction, construction_sites

    text = (CORPUS / "review_fixes.py").read_text()
    names = {"CollectiveKernel", "RebuiltKernel", "Nowhere"}
    assert construction_sites([text], names) == {
        "CollectiveKernel": [(0, "LatentTailOp", "__init__")],
        "RebuiltKernel": [(0, "RebuildingMethod", "process_weights_after_loading")],
        "Nowhere": []}
    post_load = {(0, "RebuildingMethod", "process_weights_after_loading")}
    assert built_at_construction(names, [text], post_load) == {"CollectiveKernel"}
    # a subclass built in post-load code runs the base constructor there too
    assert built_at_construction(names, [text], post_load,
                                 {"CollectiveKernel": {"RebuiltKernel"}}) == set()


def test_only_argument_less_module_hooks_are_initial_load_only():
    import ast

    from derivgraph.audit.static.scope import is_initial_load_root

    def root(src: str) -> ast.FunctionDef:
        return ast.parse(src).body[0]  # type: ignore[return-value]

    module = frozenset({"Module"})
    model_hook = root("def process_weights_after_loading(self) -> None: pass")
    layer_hook = root("def process_weights_after_loading(self, act_dtype): pass")
    method_hook = root("def process_weights_after_loading(self, layer): pass")
    assert is_initial_load_root(model_hook, module)  # model.process_weights_after_loading()
    assert not is_initial_load_root(layer_hook, module)  # layer hook: reruns on a reload
    assert not is_initial_load_root(model_hook, frozenset({"Fp8LinearMethod"}))  # not a module
    assert not is_initial_load_root(method_hook, frozenset())  # quant method: reruns
    assert not is_initial_load_root(root("def load_weights(self): pass"), module)


def test_info_and_dynamic_sites_do_not_fail_strict(corpus_report):
    und = {(Path(f.file).name, f.line) for f in corpus_report.undeclared()}
    assert ("severity_cases.py", 13) not in und  # info: handled by the copy-back
    assert ("severity_cases.py", 21) not in und  # a computed name: its own list
    assert [(f.line, f.attr) for f in corpus_report.dynamic()] == [(21, "<name>")]
    assert corpus_report.dynamic()[0].suggestion is None


def test_a_fold_is_declared_only_by_a_fold_entry():
    from derivgraph.spec.model import DerivedTensor

    report = scan([CORPUS / "folds.py"], specs=[], jobs=1,
                  declared_folds=[("FoldedRouterModel", "weight")])
    assert [(f.line, f.spec) for f in report.declared()] == [(14, "declared fold")]
    # A spec entry of kind fold (the kind issue 12 adds to the schema) declares it too; built
    # with model_construct because this branch's schema does not list the kind yet.
    specs = load_spec_text("""version: 1
specs:
  - name: router-fold
    target: {module_class: FoldedRouterModel}
    derived:
      - {name: weight, kind: attribute, formula: "weight"}
""")
    assert not scan([CORPUS / "folds.py"], specs=specs, jobs=1).declared()  # not a fold entry
    spec = specs[0]
    fold = DerivedTensor.model_construct(**{**spec.derived[0].__dict__, "kind": "fold"})
    folded = spec.model_copy(update={"derived": [fold]})
    report = scan([CORPUS / "folds.py"], specs=[folded], jobs=1)
    assert [(f.line, f.spec) for f in report.declared()] == [(14, "router-fold")]


# ---- verdicts of the executable audit -----------------------------------------------------------

def test_verdicts_are_applied_by_class_and_attribute(corpus_report, capsys):
    from derivgraph.audit.static.verdicts import Verdict, apply_verdicts

    findings = corpus_report.findings
    plain = next(f for f in findings if f.attr == "plain_t")
    assert plain.key == ("static_corpus.severity_cases.SeverityLinearMethod", "plain_t")
    assert plain.verdict is Verdict.UNCHECKED
    out = apply_verdicts(findings, {
        ("SeverityLinearMethod", "plain_t"): Verdict.CONFIRMED,  # by short class name
        ("static_corpus.severity_cases.SeverityLinearMethod", "method_t"): Verdict.REFUTED,
        ("SeverityKVCacheMethod", "_k_scale_float"): Verdict.NOT_RUNNABLE,
        ("NoSuchClass", "plain_t"): Verdict.REFUTED,
    })
    got = {f.attr: f.verdict for f in out if f.file.endswith("severity_cases.py")}
    assert got["plain_t"] is Verdict.CONFIRMED and got["method_t"] is Verdict.REFUTED
    assert got["_k_scale_float"] is Verdict.NOT_RUNNABLE and got["inv_np"] is Verdict.UNCHECKED
    assert len(out) == len(findings)
    assert [dataclasses.replace(f, verdict=Verdict.UNCHECKED) for f in out] == findings
    with pytest.raises(TypeError):
        apply_verdicts(findings, {("SeverityLinearMethod", "plain_t"): "confirmed"})
    assert out[0].as_json()["verdict"] in {v.value for v in Verdict}
    from derivgraph.audit.static.sarif import to_sarif

    report = dataclasses.replace(corpus_report, findings=out)
    sarif = to_sarif(report)["runs"][0]["results"]
    assert {r["properties"]["verdict"] for r in sarif if r["properties"]["attr"] == "plain_t"} \
        == {"confirmed"}


def test_verdicts_from_the_executable_audit_mark_the_static_report(tmp_path, capsys):
    """`audit static --verdicts` carries what `audit vllm --json` observed onto each finding."""
    verdicts = {"verdicts": [
        {"class": "AliasExperts", "attribute": "w_cat", "verdict": "confirmed"},
        {"class": "static_corpus.aliases_imports.AliasExperts", "attribute": "w_pad",
         "verdict": "refuted"},
    ]}
    path = tmp_path / "verdicts.json"
    path.write_text(json.dumps(verdicts))
    assert main(["audit", "static", str(CORPUS), "--format", "json", "--verdicts", str(path)]) == 0
    out = capsys.readouterr().out
    by_key = {tuple(f["key"]): f["verdict"] for f in json.loads(out)}
    cls = "static_corpus.aliases_imports.AliasExperts"
    assert by_key[(cls, "w_cat")] == "confirmed"  # the short class name matches too
    assert by_key[(cls, "w_pad")] == "refuted"
    assert by_key[(cls, "ones")] == "unchecked"
