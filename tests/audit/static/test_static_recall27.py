"""Recall class of issue 21 (rules27, ``recall27_cases.py``): a wrapping quant method's post-load
store that forwards what the wrapped method's post-load step has just rebuilt (vLLM's
``FusedMoEModularMethod``: ``self.moe_quant_config = self.old_quant_method.moe_quant_config``).
A true positive, false-positive twins (an attribute the wrapped step does not rebuild, a read
before the wrapped step, a throwaway local) and canaries that remove the rule or widen it."""

from __future__ import annotations

import ast
import importlib.util
import json
from pathlib import Path

from derivgraph.audit.static import forwarded as forwarded_module
from derivgraph.audit.static import rules as rules_module
from derivgraph.audit.static.forwarded import forwarded_stores, holder_class
from derivgraph.audit.static.scan import scan
from derivgraph.audit.static.semantics import Severity
from tests.audit.static.expectations import EVIDENCE_CORPUS, planted_copy

RESOURCES = Path(__file__).resolve().parents[2] / "resources"
_spec = importlib.util.spec_from_file_location("static_precision_draw",
                                               RESOURCES / "static_precision_draw.py")
assert _spec is not None and _spec.loader is not None
precision_draw = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(precision_draw)  # the committed draw script, loaded by path

CASES = "recall27_cases.py"


def _scan(folder: Path = EVIDENCE_CORPUS) -> dict[tuple[str | None, str], object]:
    """(class, attribute) -> the finding of the corpus file (one per pair there)."""
    return {(f.cls, f.attr): f for f in scan([folder / CASES], specs=[], jobs=1).findings}


def _planted(tmp_path: Path, old: str, new: str) -> dict[tuple[str | None, str], object]:
    planted_copy(EVIDENCE_CORPUS / CASES, tmp_path, old, new)
    return _scan(tmp_path)


def _line(text: str) -> int:
    source = (EVIDENCE_CORPUS / CASES).read_text()
    assert source.count(text) == 1, text
    return source.count("\n", 0, source.index(text)) + 1


_FORWARD = "self.moe_quant_config = self.old_quant_method.moe_quant_config"
_REBUILT = "self.moe_quant_config = self.get_fused_moe_quant_config(layer)"


def _loud(got) -> set[tuple[str | None, str]]:
    return {k for k, f in got.items() if f.severity is not Severity.INFO}


# ---- the true positive ---------------------------------------------------------------------------

def test_the_forwarded_config_is_reported_like_the_store_it_forwards():
    got = _scan()
    inner = got[("Fw27Fp8Method", "moe_quant_config")]
    outer = got[("Fw27ModularMethod", "moe_quant_config")]
    assert outer.line == _line(_FORWARD)
    assert (outer.category, outer.store, outer.severity) == (inner.category, inner.store,
                                                             inner.severity)
    assert outer.severity is Severity.WARNING
    assert outer.derives_from == (f"{inner.file}:{_line(_REBUILT)} "
                                  "(Fw27Fp8Method.moe_quant_config)")
    # the reader is the wrapper's own kernel call, not the wrapped method's
    assert outer.reader.startswith("kernel-call ")  # evid27: a call named as a kernel
    assert " in Fw27ModularMethod.apply: return fw27_kernel(" in outer.reader
    assert outer.evidence.startswith("forwards self.old_quant_method.moe_quant_config, which ")
    assert inner.evidence in outer.evidence
    assert outer.via == ("Fw27ModularMethod.process_weights_after_loading",)
    # the typed marks of a forward (the precision draw's --leave-out-rules-after reads rule_round)
    assert (outer.forwards, inner.forwards) == ("self.old_quant_method", None)
    assert (outer.rule_round, inner.rule_round) == (27, 0)
    assert {k for k, f in got.items() if f.forwards} == {("Fw27ModularMethod", "moe_quant_config")}


def test_only_the_true_positive_and_the_store_it_forwards_are_loud():
    assert _loud(_scan()) == {("Fw27Fp8Method", "moe_quant_config"),
                              ("Fw27ModularMethod", "moe_quant_config")}


def test_forwarding_what_the_wrapped_step_does_not_rebuild_is_no_site():
    got = _scan()
    assert ("Fw27ModularMethod", "name") not in got
    assert ("Fw27ModularMethod", "num_bits") not in got


def test_forwarding_before_the_wrapped_step_or_onto_a_local_is_no_site():
    got = _scan()
    assert ("Fw27EarlyWrapper", "moe_quant_config") not in got
    assert ("Fw27LocalWrapper", "moe_quant_config") not in got


# ---- canaries ------------------------------------------------------------------------------------

def test_canary_without_the_rule_the_forward_is_missed(monkeypatch):
    monkeypatch.setattr(rules_module, "forwarded_stores", lambda *args: iter(()))
    assert ("Fw27ModularMethod", "moe_quant_config") not in _scan()


def test_canary_without_the_rebuilt_store_check_a_forwarded_name_is_a_site(monkeypatch):
    # widened: any store on self anywhere counts as the rebuild of any attribute
    monkeypatch.setattr(forwarded_module, "rebuilt_stores", lambda sites, attr, members: [
        s for _, s in sites.values() if not s.forwards and s.owner == "self"])
    got = _scan()
    assert ("Fw27ModularMethod", "name") in got
    assert ("Fw27ModularMethod", "num_bits") in got


def test_canary_a_rebuilt_name_makes_its_forward_a_site(tmp_path):
    # the wrapped step now stores a new tensor under `name`: the forward of it is a site
    got = _planted(tmp_path, '        self.name = "fp8"\n',
                   "        self.name = layer.w13_weight_scale * 2.0\n")
    assert ("Fw27Fp8Method", "name") in got
    assert ("Fw27ModularMethod", "name") in got
    # nothing reads the wrapper's name after load: its own verdict (info) stands
    forward = got[("Fw27ModularMethod", "name")]
    assert (forward.derives_from, forward.severity) == ("Fw27Fp8Method.name", Severity.INFO)


def test_canary_the_forward_moved_after_the_wrapped_step_is_a_site(tmp_path):
    got = _planted(tmp_path, "        self.moe_quant_config = self.inner.moe_quant_config\n"
                   "        self.inner.process_weights_after_loading(layer)\n",
                   "        self.inner.process_weights_after_loading(layer)\n"
                   "        self.moe_quant_config = self.inner.moe_quant_config\n")
    assert got[("Fw27EarlyWrapper", "moe_quant_config")].severity is Severity.WARNING


def test_canary_the_forward_kept_on_self_instead_of_a_local_is_a_site(tmp_path):
    got = _planted(tmp_path, "        probe.moe_quant_config = self.inner.moe_quant_config\n",
                   "        self.moe_quant_config = self.inner.moe_quant_config\n")
    assert ("Fw27LocalWrapper", "moe_quant_config") in got


# ---- the parts -----------------------------------------------------------------------------------

def _stores(code: str, calls: list | None = None) -> list[tuple[int, str, str]]:
    func = ast.parse(code).body[0]
    return [(stmt.lineno, attr, inner) for stmt, attr, _, inner in forwarded_stores(func, calls)]


def test_forwarded_stores_need_a_post_load_call_on_the_same_receiver_before():
    assert _stores("def process_weights_after_loading(self, layer):\n"
                   "    self.a.process_weights_after_loading(layer)\n"
                   "    self.x = self.a.x\n"
                   "    self.y = self.b.y\n"
                   "    other.z = self.a.z\n") == [(3, "x", "self.a")]
    assert _stores("def f(self, layer):\n"
                   "    self.x = self.a.x\n"
                   "    self.a.process_weights_after_loading(layer)\n") == []
    # a call inside a nested function is not this function's step
    # the call list tells at once that no root is called
    code = ("def f(self, layer):\n"
            "    self.a.process_weights_after_loading(layer)\n"
            "    self.x = self.a.x\n")
    assert _stores(code, calls=[]) == []
    func = ast.parse(code).body[0]
    calls = [n for n in ast.walk(func) if isinstance(n, ast.Call)]
    assert _stores(code, calls=calls) == [(3, "x", "self.a")]
    assert _stores("def f(self, layer):\n"
                   "    def later():\n"
                   "        self.a.process_weights_after_loading(layer)\n"
                   "    self.x = self.a.x\n") == []


def test_holder_class_reads_an_annotated_argument_or_a_construction():
    text = ("class W:\n"
            "    def __init__(self, old: 'pkg.FusedMoEMethodBase', k):\n"
            "        self.old = old\n"
            "        self.made = mod.Fp8Method(k)\n"
            "        self.plain = k\n")
    assert holder_class(text, "self.old") == "FusedMoEMethodBase"
    assert holder_class(text, "self.made") == "Fp8Method"
    assert holder_class(text, "self.plain") is None
    assert holder_class(text, "self.missing") is None


# ---- vLLM: the miss, and the twelfth review's draw kept reproducible ---------------------------

_MODULAR = "vllm/model_executor/layers/fused_moe/fused_moe_modular_method.py"


def test_vllm_the_modular_method_forward_is_found(vllm_report):
    got = [f for f in vllm_report.findings if f.file == _MODULAR]
    assert [(f.line, f.attr, f.category, f.severity) for f in got] == [
        (98, "moe_quant_config", "container", Severity.WARNING)]
    # the getter (line 79) no caller consumes ranks after Elastic-EP's read, the fourteenth
    # review's reader line (ReaderIndex._bare_getter)
    assert got[0].reader == ("forward vllm/model_executor/layers/fused_moe/eep_reconfigure.py:37 "
                             "in _make_eep_experts: \"quant_config\": "
                             "quant_method.moe_quant_config,")
    assert "(35 such stores in the FusedMoEMethodBase family" in got[0].evidence
    assert got[0].forwards == "self.old_quant_method"
    assert got[0].as_json()["forwards"] == "self.old_quant_method"
    assert [f.location for f in vllm_report.findings if f.forwards] == [f"{_MODULAR}:98"]


def test_vllm_leaving_the_forwards_out_draws_the_twelfth_review_again(vllm_report):
    seed = json.loads((RESOURCES / "static_precision_seed_outside10.json").read_text())
    raw = json.loads((RESOURCES / "static_precision_outside10_draw.json").read_text())
    drawn = [(s["file"], s["line"], s["attr"]) for s in raw["sample"]]
    # rules28's findings joined the pool later: leave them out of both (rule_round 28)
    pool = precision_draw.draw_pool(vllm_report.findings, rules_after=27)
    kept = precision_draw.draw_pool(vllm_report.findings, rules_after=26)
    assert [(f.file, f.line) for f in pool if f not in kept] == [(_MODULAR, 98)]
    assert (len(pool), len(kept)) == (raw["population"] + 1, raw["population"])
    def picked(pool: list) -> list[tuple[str, int, str]]:
        return [(f.file, f.line, f.attr) for f in precision_draw.draw(pool, seed["seed"],
                                                                       seed["n"])]

    assert picked(kept) == drawn
    # canary: the whole pool (the new finding in it) draws another sample
    assert picked(pool) != drawn
