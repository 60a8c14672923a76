"""A new tensor a caller derives from a weight and hands to a constructor of another file that
keeps it (``handoff_cases.py`` calling ``handoff_lib.py``): the store is reported at the
callee's line, for positional and keyword arguments, a classmethod factory and a dataclass;
a reference or view of the kept parameter, an object dropped after use and a copy nothing reads
after load stay quiet. Canaries remove the rule, and plant each false positive's reason away."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from derivgraph.audit.static import handoff
from derivgraph.audit.static.scan import scan
from derivgraph.audit.static.semantics import Severity

CORPUS = Path(__file__).resolve().parents[2] / "fixtures" / "static_corpus_evidence"
CASES, LIB = "handoff_cases.py", "handoff_lib.py"


def _scan(folder: Path) -> dict[tuple[str, str], list[tuple[str, int, str | None, str]]]:
    """(file, attribute) -> [(severity, line, weight, reason)] of the two corpus files."""
    report = scan([folder / CASES, folder / LIB], specs=[], jobs=1)
    out: dict[tuple[str, str], list[tuple[str, int, str | None, str]]] = {}
    for f in report.findings:
        out.setdefault((Path(f.file).name, f.attr), []).append(
            (f.severity.value, f.line, f.derives_from, f.reason))
    return out


def _line_of(name: str, text: str) -> int:
    lines = (CORPUS / name).read_text().splitlines()
    return next(i for i, line in enumerate(lines, 1) if text in line)


def _copy(tmp_path: Path) -> Path:
    for name in (CASES, LIB):
        shutil.copy(CORPUS / name, tmp_path / name)
    return tmp_path


@pytest.mark.parametrize(("attr", "store", "weight", "caller"), [
    # positional, a local padded under an `if` (the Kimi-K3 dense MLP's shape)
    ("weight", "self.weight, self.device = weight", "mlp.down_proj.weight",
     "PreparedDenseBlock.__init__"),
    ("weight_t", "self.weight_t = weight_t", "layer.weight", "process_weights_after_loading"),
    # a classmethod factory hands its argument on to cls(...)
    ("mat", "self.mat = mat", "layer.w1_weight", "ScaledGemm.from_weight"),
    # a dataclass's generated constructor: the field line
    ("packed", "packed: object", "layer.w2_weight", "process_weights_after_loading"),
])
def test_a_handed_copy_is_an_error_at_the_callee_store(attr, store, weight, caller):
    ((severity, line, derives, reason),) = _scan(CORPUS)[(LIB, attr)]
    assert (severity, line, derives) == ("error", _line_of(LIB, store), weight)
    assert caller in reason and "handed in by" in reason


def test_the_factory_names_where_its_argument_came_from():
    ((_, _, _, reason),) = _scan(CORPUS)[(LIB, "mat")]
    assert "from `fused` handed in by BlockGemmMethod.process_weights_after_loading (" in reason
    assert reason.endswith(f"{CASES}:{_line_of(CASES, 'ScaledGemm.from_weight(fused)')})")


def test_the_false_positives_of_the_class_stay_quiet():
    got = _scan(CORPUS)
    # the kept parameter itself, a dtype view of it, an object dropped after one check
    for attr in ("weight_bytes", "probe_weight"):
        assert (LIB, attr) not in got
    # only SplitProjection's store: KeptProjection's (the same text) is quiet
    assert [row[1] for row in got[(LIB, "weight")]] == [
        _line_of(LIB, "self.weight, self.device = weight")]
    # kept, but nothing reads it after load
    assert [row[0] for row in got[(LIB, "source_weight")]] == ["info"]


def test_canary_without_the_rule_the_true_positives_are_quiet(monkeypatch):
    monkeypatch.setattr(handoff.HandoffRules, "_handoffs", lambda self, stmt: None)
    got = _scan(CORPUS)
    assert not {attr for name, attr in got if name == LIB}


@pytest.mark.parametrize(("old", "new", "attr"), [
    # the kept parameter, copied: a handed copy
    ("KeptProjection(gate_up, tiles)", "KeptProjection(gate_up.contiguous(), tiles)", "weight"),
    # the dtype view, made a copy
    ("ViewProjection(mlp.up_proj.weight.view(torch.uint8))",
     "ViewProjection(mlp.up_proj.weight.float())", "weight_bytes"),
    # the probe, kept
    ("        probe.check()\n", "        self.probe = probe\n", "probe_weight"),
])
def test_canary_each_false_positive_is_quiet_only_for_its_reason(tmp_path, old, new, attr):
    folder = _copy(tmp_path)
    path = folder / CASES
    text = path.read_text()
    assert text.count(old) == 1
    path.write_text(text.replace(old, new))
    before = len(_scan(CORPUS).get((LIB, attr), []))
    found = _scan(folder).get((LIB, attr), [])
    assert len(found) == before + 1 and all(Severity(v[0]) is Severity.ERROR for v in found)
