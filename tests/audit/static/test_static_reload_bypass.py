"""Three recall classes next to their false positives (``reload_bypass_cases.py``): a registered
parameter the model's loader fills around its ``weight_loader`` (stale after a layerwise
reload), a container made empty in a rebuilt object's constructor and filled lazily with
tensors (freed under a captured graph), a scale copied only for one dtype by the model-level
post-load step (stale when that dtype reaches it). Canaries remove each rule and watch the true
positive go quiet; others edit a false positive until it is flagged, for its own reason only."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

from derivgraph.audit.static import classwide, evidence
from derivgraph.audit.static.scan import scan
from derivgraph.audit.static.semantics import Severity
from tests.audit.static.expectations import EVIDENCE_CORPUS as CORPUS
from tests.audit.static.expectations import planted_copy

NAME = "reload_bypass_cases.py"


def _findings(path: Path) -> dict[str, tuple[str, str, int]]:
    return {f.attr: (f.severity.value, f.category, f.line)
            for f in scan([path], specs=[], jobs=1).findings}


def _line_of(path: Path, text: str) -> int:
    return next(i for i, line in enumerate(path.read_text().splitlines(), 1) if text in line)


def test_a_parameter_loaded_around_its_weight_loader_is_an_error_at_its_registration():
    report = scan([CORPUS / NAME], specs=[], jobs=1)
    by = {f.attr: f for f in report.findings}
    w13 = by["sink_w13"]
    assert (w13.severity, w13.category, w13.line) == (
        Severity.ERROR, "loader-bypass", _line_of(CORPUS / NAME, "self.sink_w13 = Parameter("))
    copy_line = _line_of(CORPUS / NAME, "self.sink_w13.data.copy_(weight)")
    assert f"line {copy_line}, in load_weight" in w13.reason  # the bypassing copy
    # ``x @ self.sink_w13.view(...)``: a matrix product, a kernel call (evid27)
    assert "self.sink_w13.view" in w13.reader and w13.reader.startswith("kernel-call ")
    assert by["sink_w2"].severity is Severity.ERROR  # a slice of `.data`, copied into
    # no reader: at most info
    assert (by["sink_unread"].severity, by["sink_unread"].category) == (Severity.INFO,
                                                                        "loader-bypass")
    # the false positives: an installed weight_loader method, and the default loader
    assert not {"dense_w13", "dense_w2", "dense_bias"} & set(by)


def test_a_lazy_container_on_a_rebuilt_object_is_reported_at_its_store():
    got = _findings(CORPUS / NAME)
    line = _line_of(CORPUS / NAME, "self._unit_bufs: dict[int, torch.Tensor] = {}")
    assert got["_unit_bufs"] == ("warning", "container", line)
    # the false positives: non-tensors on the rebuilt object, tensors on a kept module
    assert "_plans" not in got and "_sink_unit_bufs" not in got


def test_a_scale_copied_only_for_one_dtype_by_the_model_level_step_is_a_warning():
    got = _findings(CORPUS / NAME)
    line = _line_of(CORPUS / NAME, "self._gateup_scale = ws")
    assert got["_gateup_scale"] == ("warning", "tensor-attr", line)
    # the false positive: the dtype test only reinterprets the kept storage
    assert got["_down_scale"][:2] == ("info", "tensor-attr")


def test_canary_without_the_loader_bypass_rule_the_weights_are_quiet(monkeypatch):
    monkeypatch.setattr(classwide, "bypass_copy", lambda call: None)
    got = _findings(CORPUS / NAME)
    assert "sink_w13" not in got and "sink_w2" not in got


def test_canary_without_the_lazy_container_rule_the_container_is_quiet(monkeypatch):
    monkeypatch.setattr(classwide, "lazy_container_fill", lambda func, attr: None)
    assert "_unit_bufs" not in _findings(CORPUS / NAME)


def test_canary_without_the_dtype_copy_rule_the_scale_is_info(monkeypatch):
    rule = evidence._dtype_conditional_reference
    monkeypatch.setattr(evidence, "_dtype_conditional_reference",
                        lambda f, body: "view" if rule(f, body) else None)
    assert _findings(CORPUS / NAME)["_gateup_scale"][0] == "info"


@pytest.mark.parametrize(("old", "new", "attr", "severity"), [
    # the installed weight_loader dropped: its method is then an ordinary loader bypass
    ('        set_weight_attrs(self.dense_w13, {"weight_loader": self._load_w13})\n', "",
     "dense_w13", Severity.ERROR),
    # the partial installed as weight_loader dropped
    ("        self.dense_bias.weight_loader = partial(self._load_bias, shard=0)\n", "",
     "dense_bias", Severity.ERROR),
    # the kept module turned into experts post-load code rebuilds
    ("class UnitWeightsSinkMLP(nn.Module):", "class UnitWeightsSinkExperts(mk.FusedMoEExperts):",
     "_sink_unit_bufs", Severity.WARNING),
    # the plans turned into tensors
    ("self._plans[width] = ops.make_plan(width)", "self._plans[width] = torch.zeros(width)",
     "_plans", Severity.WARNING),
    # the dtype view turned into a copy
    ("ws = ws.view(torch.float8_e8m0fnu)", "ws = ws.to(torch.float32).contiguous()",
     "_down_scale", Severity.WARNING),
])
def test_canary_each_false_positive_is_quiet_only_for_its_reason(tmp_path, old, new, attr,
                                                                 severity):
    path = planted_copy(CORPUS / NAME, tmp_path, old, new)
    assert Severity(_findings(path)[attr][0]) is severity


# ---- the v6 misses in the installed vLLM 0.33.0 -------------------------------------------------

_SITES = {
    ("models/inkling/amd/moe.py", 301, "w13_weight"): ("error", "loader-bypass"),
    ("models/inkling/amd/moe.py", 305, "w2_weight"): ("error", "loader-bypass"),
    ("models/inkling/nvidia/moe.py", 298, "w13_weight"): ("error", "loader-bypass"),
    ("models/muse_spark/amd/muse_moe_runner.py", 429, "_unit_weights_bufs"):
        ("warning", "container"),
    ("models/deepseek_v4/amd/model.py", 177, "_gateup_scale"): ("warning", "tensor-attr"),
}


@pytest.mark.vllm
@pytest.mark.skipif(importlib.util.find_spec("vllm") is None, reason="vLLM is not installed")
def test_the_v6_misses_are_found_in_vllm():
    root = Path(importlib.util.find_spec("vllm").origin).parent
    files = sorted({root / f for f, _, _ in _SITES})
    got = {(f.file.split("vllm/", 1)[-1], f.line, f.attr): (f.severity.value, f.category)
           for f in scan(files, specs=[], jobs=1).findings}
    assert {k: got.get(k) for k in _SITES} == _SITES
