"""Classes of the second outside review's misses: weight loaders that bind a new Parameter
on every load (``loader_cases.py``) and CPU-only steps that cannot rebuild what they derived
because a flag they set makes a rerun return early (``platform_cases.py``), each with canaries
that plant the bug the rule reads."""

from __future__ import annotations

import shutil
from pathlib import Path

from derivgraph.audit.static.loaders import is_loader_function, loader_rebind, refilled_in_place
from derivgraph.audit.static.platforms import rerun_guard, reset_flags
from derivgraph.audit.static.scan import scan
from derivgraph.audit.static.semantics import Severity

CORPUS = Path(__file__).resolve().parents[2] / "fixtures" / "static_corpus_evidence"


def _planted(tmp_path: Path, name: str, old: str, new: str) -> dict[str, list]:
    dst = tmp_path / "corpus"
    shutil.copytree(CORPUS, dst)
    path = dst / name
    text = path.read_text()
    assert text.count(old) == 1
    path.write_text(text.replace(old, new))
    got: dict[str, list] = {}
    for f in scan([dst], specs=[], jobs=1).findings:
        if Path(f.file).name == name:
            got.setdefault(f.attr, []).append(f)
    return got


def test_loader_findings_carry_their_evidence():
    got = {(Path(f.file).name, f.attr): f for f in scan([CORPUS / "loader_cases.py"],
                                                         specs=[], jobs=1).findings
           if f.cls != "PooledModel"}  # the pooler-only twin: test_static_precision21.py
    bias = got[("loader_cases.py", "bias")]
    assert bias.store == "loader-rebind" and bias.severity is Severity.WARNING
    assert bias.function == "ScoredModel.load_weights"  # a class built by a factory function
    assert "binds a new Parameter on every load" in bias.evidence
    assert got[("loader_cases.py", "weight")].evidence.startswith("registered once")
    assert got[("loader_cases.py", "param")].evidence.startswith("converts the parameter's own")


def test_canary_a_loader_without_its_once_flag_is_a_warning(tmp_path):
    got = _planted(tmp_path, "loader_cases.py",
                   "            if not self.head.is_fallback:\n"
                   "                self.head.is_fallback = True\n"
                   "                self.head.weight = nn.Parameter(",
                   "            if loaded_weight is not None:\n"
                   "                self.head.weight = nn.Parameter(")
    assert [f.severity for f in got["weight"]] == [Severity.WARNING]


def test_canary_a_factory_class_out_of_reach_has_no_finding(tmp_path):
    # the same loader in a nested function rather than a class is not a method of any class
    got = _planted(tmp_path, "loader_cases.py", "    class ScoredModel(cls):",
                   "    def scored_model():")
    assert [f.cls for f in got["bias"]] == ["PooledModel"]  # only the pooler-only twin


def test_cpu_rerun_guard_keeps_the_site_loud():
    got = {f.attr: f for f in scan([CORPUS / "platform_cases.py"], specs=[], jobs=1).findings}
    once = got["_host_kept_t"]
    assert once.severity is Severity.ERROR and "`_host_kept`" in once.evidence
    assert got["_host_zero_t"].severity is Severity.INFO  # flag set but never returned on


def test_cpu_rerun_guard_over_an_emptied_source_is_info():
    # the step empties the parameter it reads: both reload paths raise on its 0 elements
    got = {f.attr: f for f in scan([CORPUS / "platform_cases.py"], specs=[], jobs=1).findings}
    emptied = got["_host_scale_t"]
    assert emptied.severity is Severity.INFO
    assert "returns early on `_host_repacked`" in emptied.evidence
    assert "raise" in emptied.evidence


def test_canary_a_guarded_cpu_step_keeping_its_source_is_loud_again(tmp_path):
    got = _planted(tmp_path, "platform_cases.py",
                   "        layer.weight_scale.data = torch.empty(0)\n", "")
    assert [f.severity for f in got["_host_scale_t"]] == [Severity.ERROR]


def test_canary_without_the_early_return_the_cpu_copy_is_info(tmp_path):
    got = _planted(tmp_path, "platform_cases.py",
                   "        if getattr(layer, \"_host_repacked\", False):\n            return\n",
                   "")
    assert [f.severity for f in got["_host_scale_t"]] == [Severity.INFO]


def test_canary_a_flag_the_machinery_no_longer_resets_is_loud(tmp_path):
    dst = tmp_path / "corpus"
    shutil.copytree(CORPUS, dst)
    machinery = dst / "model_loader" / "reload" / "layerwise_like.py"
    text = machinery.read_text()
    machinery.write_text(text.replace('delattr(layer, "_host_online_done")', "pass"))
    got = [f for f in scan([dst], specs=[], jobs=1).findings if f.attr == "_host_bias_t"]
    # the guard holds now; the step empties its source, so a reload raises instead (info)
    assert [f.severity for f in got] == [Severity.INFO]
    assert "returns early on `_host_online_done`" in got[0].evidence


def test_rules_on_text():
    assert is_loader_function("M.load_weights") and is_loader_function("weight_loader")
    assert not is_loader_function("M.process_weights_after_loading")
    assert loader_rebind("M.load_weights", "tensor-attr", "torch.nn.Parameter(b)", False, False)
    assert not loader_rebind("M.load_weights", "tensor-attr", "torch.empty(4)", True, False)
    assert not loader_rebind("M.process_weights_after_loading", "tensor-attr",
                             "nn.Parameter(b)", False, False)
    assert refilled_in_place("param", "param.data.to(w.dtype)", "", "") is not None
    assert refilled_in_place("param", "w.to(torch.float32)", "", "") is None
    body = ("def f(self, w):\n    if not self.done:\n        self.done = True\n"
            "        self.p = nn.Parameter(w)\n")
    assert refilled_in_place("p", "nn.Parameter(w)", body, "        self.p = nn.Parameter(w)")
    file = "    if getattr(layer, '_once', False):\n        return\n"
    assert rerun_guard("    layer._once = True\n", file) == "_once"
    assert rerun_guard("    layer._once = True\n", file, frozenset({"_once"})) is None
    assert rerun_guard("    layer._once = True\n", file.replace("return", "return x")) is None
    assert reset_flags(['    delattr(layer, "_done")\n']) == {"_done"}


def test_canary_a_config_field_read_after_load_is_loud(tmp_path):
    # the config's empty scale is read only by the post-load prepare step: info; a read in
    # apply makes the reader evidence (not the store) raise it
    got = _planted(tmp_path, "config_cases.py", "        return ops.run(x, self._prepared)\n",
                   "        return ops.run(x, self._prepared, self.quant_config._w2.scale)\n")
    scales = {f.line: f.severity for f in got["scale"]}
    assert scales[max(scales)] is not Severity.INFO
