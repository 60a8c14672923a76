"""Recall classes of issue 21 (rules28, ``recall28_cases.py``):

1. a storage rebind of a parameter the reload's skip set keeps live (:mod:`.reload_skips`),
   the skip set read from the scanned tree's ``model_loader/reload/meta.py``;
2. a lazily built tensor the post-load step resets to None (:mod:`.lazy_resets`).

True positives, false-positive twins and canaries that remove each rule or widen it."""

from __future__ import annotations

import shutil
from pathlib import Path

from derivgraph.audit.static import lazy_resets as lazy_module
from derivgraph.audit.static import module as module_module
from derivgraph.audit.static import reload_skips as skips_module
from derivgraph.audit.static import scan as scan_module
from derivgraph.audit.static.reload_skips import FALLBACK_SKIP_SET, skip_set, skip_set_of
from derivgraph.audit.static.scan import scan
from derivgraph.audit.static.semantics import Severity
from tests.audit.static.expectations import EVIDENCE_CORPUS, planted_copy

CASES = "recall28_cases.py"


def _scan(folder: Path = EVIDENCE_CORPUS) -> dict[tuple[str | None, str], object]:
    """(class, attribute) -> the finding of the corpus file (one per pair there)."""
    return {(f.cls, f.attr): f for f in scan([folder / CASES], specs=[], jobs=1).findings}


def _line(text: str) -> int:
    source = (EVIDENCE_CORPUS / CASES).read_text()
    assert source.count(text) == 1, text
    return source.count("\n", 0, source.index(text)) + 1


def _loud(got) -> dict[tuple[str | None, str], str]:
    return {k: f.severity.value for k, f in got.items() if f.severity is not Severity.INFO}


_BIAS = "layer.bias.data = r28_permute(layer.bias)"
_SCALE = "layer.w_scale.data = r28_permute(layer.w_scale)"
_LAZY = "            self.ws = ws"


# ---- class 1: a rebind of a parameter in the reload's skip set ----------------------------------

def test_a_rebind_of_a_skipped_parameter_is_a_moved_store_with_its_reader():
    got = _scan()
    bias = got[("R28LinearMethod", "bias")]
    assert (bias.line, bias.category, bias.store) == (_line(_BIAS), "data-rebind",
                                                      "skipped-parameter")
    assert bias.severity is Severity.WARNING  # a reader, no weight-named source: moved
    assert bias.reader.startswith("kernel-call ")
    assert bias.reader.endswith("return r28_linear_kernel(x, layer.weight, layer.w_scale, "
                                "layer.bias)")
    assert bias.rule_round == 28


def test_the_same_rebind_of_a_name_outside_the_skip_set_stays_info():
    scale = _scan()[("R28LinearMethod", "w_scale")]
    assert (scale.line, scale.store, scale.severity) == (_line(_SCALE), "layer-parameter",
                                                         Severity.INFO)
    assert scale.rule_round == 0


def test_a_replace_parameter_of_a_skipped_name_stays_info():
    replaced = _scan()[("R28ReplacingLinearMethod", "bias")]
    assert (replaced.category, replaced.store, replaced.severity) == (
        "replace-layout", "layer-parameter", Severity.INFO)


def test_canary_widened_to_replace_parameter_the_replace_twin_is_loud(monkeypatch):
    monkeypatch.setattr(skips_module, "REBIND_CATEGORIES",
                        skips_module.REBIND_CATEGORIES | {"replace-layout"})
    replaced = _scan()[("R28ReplacingLinearMethod", "bias")]
    assert (replaced.store, replaced.severity) == ("skipped-parameter", Severity.WARNING)


def test_a_new_parameter_bound_to_a_skipped_name_is_moved_too(tmp_path):
    planted_copy(EVIDENCE_CORPUS / CASES, tmp_path, _BIAS,
                 "layer.bias = torch.nn.Parameter(r28_permute(layer.bias), requires_grad=False)")
    bias = _scan(tmp_path)[("R28LinearMethod", "bias")]
    assert (bias.category, bias.store, bias.severity) == ("tensor-attr", "skipped-parameter",
                                                          Severity.WARNING)


def test_only_the_true_positives_are_loud():
    assert _loud(_scan()) == {("R28LinearMethod", "bias"): "warning",
                              ("R28MoEMethod", "ws"): "warning"}


def _tree_with_meta(tmp_path: Path, meta: str) -> Path:
    pkg = tmp_path / "pkg"
    (pkg / "model_loader" / "reload").mkdir(parents=True)
    shutil.copy(EVIDENCE_CORPUS / CASES, pkg / CASES)
    (pkg / "model_loader" / "reload" / "meta.py").write_text(meta)
    return pkg


def test_the_skip_set_is_read_from_the_scanned_reload_source(tmp_path):
    # the engine's set moves: w_scale skipped, bias no longer
    pkg = _tree_with_meta(tmp_path, 'SKIP_LOAD_TENSORS: set[str] = {"expert_map"}\n'
                                    'SKIP_TENSORS = SKIP_LOAD_TENSORS | {"w_scale"}\n')
    got = {(f.cls, f.attr): f for f in scan([pkg], specs=[], jobs=1).findings}
    assert got[("R28LinearMethod", "w_scale")].store == "skipped-parameter"
    assert got[("R28LinearMethod", "bias")].store == "layer-parameter"
    assert got[("R28LinearMethod", "bias")].severity is Severity.INFO


def test_skip_set_parsing_and_fallback():
    assert skip_set_of('A = 1\nSKIP_LOAD_TENSORS = {"a", "b"}\n'
                       'SKIP_TENSORS: set[str] = SKIP_LOAD_TENSORS | {"bias"}\n') == \
        frozenset({"a", "b", "bias"})
    assert skip_set_of('SKIP_LOAD_TENSORS = set(["x"])\n') == frozenset({"x"})
    assert skip_set_of('OTHER = {"bias"}\n') == frozenset()  # no skip set: nothing skipped
    assert skip_set([("a/b.py", "")]) == FALLBACK_SKIP_SET  # file absent: vLLM 0.33.0's set
    assert "bias" in FALLBACK_SKIP_SET
    assert skip_set([("v/model_loader/reload/meta.py", 'SKIP_TENSORS = {"q"}\n')]) == {"q"}


def test_canary_without_the_skip_mark_the_bias_rebind_is_info(monkeypatch):
    monkeypatch.setattr(scan_module, "mark_reload_skipped", lambda sites, skipped: None)
    bias = _scan()[("R28LinearMethod", "bias")]
    assert (bias.store, bias.severity) == ("layer-parameter", Severity.INFO)


class _Everything(frozenset):
    def __contains__(self, item: object) -> bool:
        return True


def test_canary_a_widened_skip_set_makes_the_twin_loud(monkeypatch):
    monkeypatch.setattr(scan_module, "skip_set", lambda files: _Everything())
    assert _scan()[("R28LinearMethod", "w_scale")].store == "skipped-parameter"


# ---- class 2: a lazy tensor that post-load code resets ------------------------------------------

def test_a_lazy_tensor_reset_by_the_post_load_step_is_a_site_with_its_reader():
    ws = _scan()[("R28MoEMethod", "ws")]
    assert (ws.line, ws.category, ws.store) == (_line(_LAZY), "tensor-attr", "object-attribute")
    assert ws.severity is Severity.WARNING  # an allocation read after load: moved, no weight
    # evid31: the lazy accessor _get_ws hands ws to its caller, whose kernel call reads it
    assert ws.reader.endswith(
        "in R28MoEMethod.apply: return r28_moe_kernel(x, ws, self._get_table())")
    assert ws.via == ("R28MoEMethod.process_weights_after_loading", "R28MoEMethod._get_ws")
    assert "drops on every reload" in ws.reason and ws.rule_round == 28


def test_a_reset_no_method_fills_and_a_lazy_non_tensor_are_no_sites():
    got = _scan()
    assert ("R28MoEMethod", "note") not in got
    assert ("R28MoEMethod", "table") not in got


def test_a_lazy_tensor_no_post_load_step_resets_is_no_site(tmp_path):
    planted_copy(EVIDENCE_CORPUS / CASES, tmp_path,
                 "contiguous(), requires_grad=False)\n        self.ws = None\n",
                 "contiguous(), requires_grad=False)\n")
    assert ("R28MoEMethod", "ws") not in _scan(tmp_path)


def test_canary_without_the_rule_the_lazy_tensor_is_missed(monkeypatch):
    monkeypatch.setattr(module_module, "lazy_reset_sites", lambda *args: [])
    assert ("R28MoEMethod", "ws") not in _scan()


def test_canary_a_lazy_fill_of_anything_makes_the_dict_twin_a_site(monkeypatch):
    monkeypatch.setattr(lazy_module, "is_construction", lambda value: True)
    assert ("R28MoEMethod", "table") in _scan()
