"""The static audit's evidence per finding, recall on the outside review's miss classes, the CI
gate (``--baseline``, SARIF ``baselineState``, ``--changed-since``) and the held-out figures.

Corpus: tests/fixtures/static_corpus_evidence/, where ``# expect: CATEGORY SEVERITY`` marks every
site that may be an error or a warning (and the severity its evidence allows).
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from derivgraph.audit.static.baseline import BaselineState, fingerprint, load_baseline
from derivgraph.audit.static.readers import ReaderKind, derives_from, escapes
from derivgraph.audit.static.scan import scan
from derivgraph.audit.static.semantics import Severity
from derivgraph.cli import main
from derivgraph.errors import BaselineError

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"
CORPUS = FIXTURES / "static_corpus_evidence"
RESOURCES = Path(__file__).resolve().parents[2] / "resources"
_MARK = re.compile(r"# expect: ([a-z-]+) (error|warning|info)\b(?: x(\d))?")


def _marked() -> dict[tuple[str, int], list[tuple[str, str]]]:
    """(file, line) -> [(category, severity)] per site the corpus marks (``x2``: two sites)."""
    out = {}
    for path in sorted(CORPUS.rglob("*.py")):
        for n, line in enumerate(path.read_text().splitlines(), 1):
            m = _MARK.search(line)
            if m:
                out[(path.relative_to(CORPUS).as_posix(), n)] = \
                    [(m.group(1), m.group(2))] * int(m.group(3) or 1)
    return out


@pytest.fixture(scope="module")
def report():
    return scan([CORPUS], specs=[], jobs=1)


def _rel(f) -> str:
    return Path(f.file).resolve().relative_to(CORPUS.resolve()).as_posix()


def test_every_marked_site_gets_the_severity_its_evidence_allows(report):
    got: dict[tuple[str, int], list[tuple[str, str]]] = {}
    for f in report.findings:
        got.setdefault((_rel(f), f.line), []).append((f.category, f.severity.value))
    marked = _marked()
    assert {k: sorted(got.get(k, [])) for k in marked} == marked


def test_no_unmarked_error_or_warning(report):
    marked = _marked()
    loud = {(_rel(f), f.line, f.attr) for f in report.findings
            if f.severity is not Severity.INFO and (_rel(f), f.line) not in marked}
    assert loud == set()


def test_each_error_names_its_reader_line_and_weight(report):
    errors = [f for f in report.findings if f.severity is Severity.ERROR]
    assert len(errors) >= 8
    for f in errors:
        assert f.reader and f.derives_from, f
        kind, where = f.reader.split(" ", 1)
        assert kind in {k.value for k in ReaderKind}
        path, line = where.split(" in ", 1)[0].rsplit(":", 1)
        quoted = f.reader.split(": ", 1)[1]
        assert Path(path).read_text().splitlines()[int(line) - 1].strip().startswith(quoted)
        # the read itself, or (evid28) a plain alias's use, the alias read named as the hand-off
        handed = f.evidence.split("; handed on through ", 1)[1] if "; handed on through " in \
            f.evidence else ""
        assert f.attr in quoted or f.category == "lazy-cache" or f".{f.attr}" in handed


def test_info_without_reader_says_why(report):
    by = {(_rel(f), f.attr, f.line): f for f in report.findings}

    def at(file: str, attr: str):
        (found,) = [f for (n, a, _), f in by.items() if n == file and a == attr]
        return found

    (unread,) = [f for f in report.findings
                 if _rel(f) == "evidence_cases.py" and f.owner == "self.quant_config._w1"]
    assert "no reader after load" in unread.evidence
    assert "never leaves it" in at("evidence_cases.py", "scales").evidence
    assert "applied once per load" in at("evidence_cases.py", "w13_weight_scale_2").evidence
    assert "reload machinery" in at("model_loader/reload/layerwise_like.py",
                                    "restored_weight_copy").evidence
    assert "copied only for one dtype" in at("evidence_cases.py", "_wo_scale").evidence
    assert at("evidence_cases.py", "locks").derives_from is None


def _copy_corpus(tmp_path: Path) -> Path:
    dst = tmp_path / "corpus"
    shutil.copytree(CORPUS, dst)
    return dst


def test_canary_removing_the_reader_drops_the_error_to_info(tmp_path):
    dst = _copy_corpus(tmp_path)
    path = dst / "evidence_cases.py"
    text = path.read_text()
    planted = text.replace("return ops.gemm(x, self.wo.weight, self._wo_scale_f32)",
                           "return ops.gemm(x, self.wo.weight)")
    assert planted != text
    path.write_text(planted)
    got = {f.attr: f.severity for f in scan([dst], specs=[], jobs=1).findings}
    assert got["_wo_scale_f32"] is Severity.INFO


def test_canary_a_fold_called_after_load_is_a_warning_again(tmp_path):
    dst = _copy_corpus(tmp_path)
    path = dst / "evidence_cases.py"
    text = path.read_text()
    planted = text.replace("    def process_weights_after_loading(self, layer):\n"
                           "        layer.w13_weight_scale_2.data.mul_(layer.w13_input_scale)",
                           "    def fold13(self, layer):\n"
                           "        layer.w13_weight_scale_2.data.mul_(layer.w13_input_scale)\n\n"
                           "    def process_weights_after_loading(self, layer):\n"
                           "        self.fold13(layer)\n\n"
                           "    def forward(self, layer):\n"
                           "        self.fold13(layer)")
    assert planted != text
    path.write_text(planted)
    got = {f.attr: f.severity for f in scan([dst], specs=[], jobs=1).findings
           if f.category == "fold"}
    assert got["w13_weight_scale_2"] is Severity.WARNING


def test_escapes_and_derives_from():
    body = "def f(self, layer):\n    ark = Ark()\n    ark.s = layer.s\n    ark.post_init()\n"
    assert not escapes(body, "ark")
    assert escapes(body + "    layer.ark = ark\n", "ark")
    assert escapes(body + "    return ark\n", "ark")
    assert escapes(body + "    keep(ark)\n", "ark")
    assert derives_from("torch.zeros(4, device=layer.weight.device)", "", "locks") is None
    assert derives_from("w.t()", "    w = layer.w13_weight\n", "x") == "layer.w13_weight"


# ---- baseline and changed files --------------------------------------------------------------

def test_baseline_reports_only_new_findings_and_sarif_marks_the_state(tmp_path, capsys):
    dst = _copy_corpus(tmp_path)
    base = tmp_path / "base.json"
    assert main(["audit", "static", str(dst), "--format", "json", "-o", str(base)]) == 0
    assert main(["audit", "static", str(dst), "--baseline", str(base), "--strict"]) == 0
    path = dst / "machinery_twin.py"
    path.write_text(path.read_text() + (
        "\n\nclass NewMethod:\n"
        "    def process_weights_after_loading(self, layer):\n"
        "        layer.fresh_copy = layer.kernel_weight.t().contiguous()\n\n"
        "    def apply(self, layer, x):\n"
        "        return torch.mm(x, layer.fresh_copy)\n"))
    capsys.readouterr()
    assert main(["audit", "static", str(dst), "--baseline", str(base), "--strict",
                 "--format", "json"]) == 1
    rows = json.loads(capsys.readouterr().out)
    assert [(r["attr"], r["baseline_state"]) for r in rows] == [("fresh_copy", "new")]
    sarif = tmp_path / "out.sarif"
    assert main(["audit", "static", str(dst), "--baseline", str(base), "--format", "sarif",
                 "-o", str(sarif)]) == 0
    log = json.loads(sarif.read_text())
    jsonschema = pytest.importorskip("jsonschema")
    schema = json.loads((FIXTURES / "sarif" / "sarif-schema-2.1.0.json").read_text())
    assert not list(jsonschema.Draft4Validator(schema).iter_errors(log))
    results = log["runs"][0]["results"]
    states = {r["properties"]["attr"]: r["baselineState"] for r in results}
    assert states["fresh_copy"] == "new"
    assert {v for k, v in states.items() if k != "fresh_copy"} == {"unchanged"}
    assert load_baseline(sarif) >= load_baseline(base)


def test_baseline_fingerprint_ignores_line_moves(tmp_path):
    dst = _copy_corpus(tmp_path)
    before = {fingerprint(f) for f in scan([dst], specs=[], jobs=1).findings}
    path = dst / "evidence_cases.py"
    path.write_text("# a new first line\n\n" + path.read_text())
    after = scan([dst], specs=[], jobs=1).findings
    assert {fingerprint(f) for f in after} == before
    assert all(f.baseline_state is None for f in after)


def test_a_bad_baseline_is_a_clear_error(tmp_path, capsys):
    bad = tmp_path / "bad.json"
    bad.write_text('{"not": "a report"}')
    with pytest.raises(BaselineError, match="neither a static-audit JSON report"):
        load_baseline(bad)
    assert main(["audit", "static", str(CORPUS), "--baseline", str(bad)]) == 2
    assert "neither a static-audit JSON report" in capsys.readouterr().err
    assert BaselineState("new") is BaselineState.NEW


def _git(cwd: Path, *args: str) -> None:
    subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True,
                   env={"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "HOME": str(cwd),
                        "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@t",
                        "PATH": "/usr/bin:/bin:/usr/local/bin"})


@pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")
def test_changed_since_scans_only_the_files_a_change_touched(tmp_path, capsys):
    dst = _copy_corpus(tmp_path)
    _git(dst, "init", "-q")
    _git(dst, "add", "-A")
    _git(dst, "commit", "-qm", "base")
    capsys.readouterr()
    assert main(["audit", "static", str(dst), "--changed-since", "HEAD", "--format", "json",
                 "--strict"]) == 0  # nothing changed: nothing to audit, and a pass
    assert json.loads(capsys.readouterr().out) == []
    path = dst / "machinery_twin.py"
    path.write_text(path.read_text() + "\n")
    capsys.readouterr()
    assert main(["audit", "static", str(dst), "--changed-since", "HEAD", "--format", "json",
                 "--show-info"]) == 0
    files = {Path(r["file"]).name for r in json.loads(capsys.readouterr().out)}
    assert files == {"machinery_twin.py"}
    assert main(["audit", "static", str(dst), "--changed-since", "no-such-ref"]) == 2
    assert "no-such-ref" in capsys.readouterr().err


# ---- vLLM: the declared sites, the held-out recall lists, the precision review -----------------

@pytest.fixture(scope="module")
def vllm_report():
    pytest.importorskip("vllm")
    return scan(package="vllm")


def test_the_two_declared_sites_without_a_finding_are_found(vllm_report):
    got = {(Path(f.file).name, f.attr): f.declared for f in vllm_report.findings}
    assert got[("gemma4_mtp.py", "_stable_full_lm_head_weight")]
    assert got[("compressed_tensors_moe_w4a8_fp8.py", "b_strides1")]
    assert got[("compressed_tensors_moe_w4a8_fp8.py", "b_strides2")]


def _held_out_recall(report) -> dict[str, tuple[int, int]]:
    lists = json.loads((RESOURCES / "static_heldout_vllm_0.33.json").read_text())["lists"]
    out = {}
    for name, body in lists.items():
        real = [r for r in body["sample"] if r["real"]]
        hit = 0
        for r in real:
            attrs = set(re.findall(r"(?:self|layer)\.(\w+)\s*(?::[^=]*)?=", r["text"]))
            hit += any(f.file == r["file"] and abs(f.line - r["line"]) <= 3 and f.attr in attrs
                       and (f.declared or f.severity is not Severity.INFO)
                       for f in report.findings)
        out[name] = (hit, len(real))
    return out


def test_held_out_recall_figures(vllm_report):
    assert _held_out_recall(vllm_report) == HELD_OUT


HELD_OUT = {"helpers": (5, 7), "lazy": (8, 9), "loaders": (12, 12)}
"""Measured after the rule changes (before them: 5/7, 3/9, 7/12); ``helpers`` went 6/7, then 5/7
under the CPU-only rule, 6/7 again once a CPU step that returns early on its own flag stays
loud (``zentorch.py:255``), and 4/7 (issue 21) once such a step that also empties its source
parameters is info: both reload paths raise on the emptied parameters (the published judging
rule's CPU reading; the seventh and eighth precision reviews judged zentorch ``:255``/``:256``
false positives); then 5/7 and 12/12 (rules24) once calls through an attribute chain reach the
MuseSpark MegaMoE finalizer (``mega_moe.py:234 _norm_gamma``), in both lists."""


def test_precision_review_file_is_consistent(vllm_report):
    review = json.loads((RESOURCES / "static_precision_vllm_0.33.json").read_text())
    seed = json.loads((RESOURCES / "static_precision_seed.json").read_text())
    assert review["seed"] == seed["seed"] and len(review["sample"]) == seed["n"]
    judged = [r["judgement"] for r in review["sample"]]
    assert set(judged) <= {"TP", "FP"}
    assert review["summary"]["tp"] == judged.count("TP")
    for row in review["sample"]:
        assert row["reader"] and row["reader_line"].strip()
    # the population the sample was drawn from is what the audit reports now (findings
    # declared by a spec merged after the draw count back in: named in the review)
    since = set(review["specs_added_since"])
    pool = [f for f in vllm_report.findings if f.severity is not Severity.INFO
            and (not f.declared or f.spec in since)]
    # the rules since the draw (CPU-only paths, a deleted source, references built once: info;
    # quant configs returned by helpers: new warnings) moved the pool from 96 to 115; CPU steps
    # that return early on their own flag (5 zentorch sites) and a loader binding a new
    # Parameter (adapters) to 121; a library call's result kept through a local
    # (``modelopt_block_quant.py:366``) and a property alias of a config tensor
    # (``flashinfer_b12x_moe.py:125``) to 123; a view made by a layer kernel's rerunning step
    # (``scaled_mm/xpu.py:263``, a reference to the reload temporary) and three copies refilled
    # only by post-load code (the b12x and FlashInfer fp32 sinks, the MuseSpark AMD router
    # planes) to 127; five parameters loaded around their weight_loader (Inkling sink experts,
    # LongCat n-gram projection), two lazy containers on rebuilt experts (MuseSpark AMD, b12x)
    # and three scales copied for one dtype by DeepSeek-V4 ROCm's model-level step to 137; the
    # Kimi-K3 projection's padded copy handed to its constructor (``projection.py:76`` and the
    # CuTe view of it, ``:78``) to 139; issue 21's rules (a CPU step that empties its source
    # behind its own flag: 5 zentorch sites; a tensor-free config builder; a loader step that
    # deletes its parameters; a pooler-only head; a first-run config of references; a cache read
    # only by post-load code) to 129; the recall classes after v9 (lazy per-layer scale tables
    # stored by a tuple unpack, ``rocm_aiter_fa.py:620`` k/v; CPU closures over a weight handle
    # or prepacked copy whose source an embedding caller keeps, ``layers/utils.py:599``, ``:650``)
    # to 133; the CPU clause's unpacked copy next to a weight packed in place, whose branch
    # returns before the step's emptying (``layers/utils.py:577``, rules23) to 134; the recall
    # classes after v10b/v11 (model-loading copies, calls through an attribute chain, rules24)
    # to 144; the CPU-offload staging copies of rules26 (``offloader/prefetch.py:661``, its
    # allocation, and ``:705``, its re-pinned local copy) to 146; the forwarded rebuild of
    # rules27 (``fused_moe_modular_method.py:98``, the wrapper's forwarded config) to 147; the
    # reload skip set and the reset lazy tensors of rules28 (``marlin.py:177`` bias,
    # ``inc_wna16_moe.py:185``, ``:208``) to 150; the rebuilt quant config the experts base
    # class keeps (rules29, ``modular_kernel.py:524``) to 151
    assert review["population"] == 96 and len(pool) == 151
    drawn = {(f.file, f.line, f.attr) for f in pool}
    gone = [r for r in review["sample"] if (r["file"], r["line"], r["attr"]) not in drawn]
    # with the two zentorch sites, info again (their source is emptied); `layers/utils.py:599`
    # (judged TP) is back since its step empties the weight only for callers that ask for it and
    # the embedding's method does not (rules22)
    assert len(gone) == 9
    for r in gone:  # each is info now, by one of those named rules
        (f,) = [f for f in vllm_report.findings
                if (f.file, f.line, f.attr) == (r["file"], r["line"], r["attr"])]
        assert f.severity is Severity.INFO
        assert f.evidence.startswith(("runs only on the CPU platform", "made once from")) \
            or f.store == "view-of-kept", r


# ---- the outside review's classes: canaries -----------------------------------------------------

@pytest.mark.parametrize(("old", "new", "attr"), [
    # a CPU-only class renamed for a device: its store is an error again
    ("class CPUPackedLinearKernel:", "class GpuPackedLinearKernel:", "_packed"),
    # the CPU platform test turned into a CUDA one
    ("        if current_platform.is_cpu():\n            layer._host_weight",
     "        if current_platform.is_cuda():\n            layer._host_weight", "_host_weight"),
    # the model-level step keeps the experts it fused
    ("            \"_fused_w13\", torch.stack([e.fc1.weight for e in self.experts]), "
     "persistent=False)\n        del self.experts\n",
     "            \"_fused_w13\", torch.stack([e.fc1.weight for e in self.experts]), "
     "persistent=False)\n", "_fused_w13"),
])
def test_canary_outside_review_rules_go_red_without_their_signal(tmp_path, old, new, attr):
    dst = _copy_corpus(tmp_path)
    path = dst / "platform_cases.py"
    text = path.read_text()
    assert text.count(old) == 1
    path.write_text(text.replace(old, new))
    got = [f for f in scan([dst / "platform_cases.py"], specs=[], jobs=1).findings
           if f.attr == attr]
    assert any(f.severity is Severity.ERROR for f in got), got


def test_canary_a_config_builder_without_its_annotation_is_no_reader(tmp_path):
    dst = _copy_corpus(tmp_path)
    path = dst / "config_cases.py"
    text = path.read_text()
    planted = text.replace("def make_quant_config(self, layer) -> GroupedQuantConfig | None:",
                           "def make_quant_config(self, layer):")
    assert planted != text
    path.write_text(planted)
    got = {(f.line, f.attr): f for f in scan([path], specs=[], jobs=1).findings}
    # the read by the unannotated builder no longer counts as a reader
    assert got[next(k for k in got if k[1] == "w13_precision")].severity is Severity.INFO
    # the configs are still found by the constructor the builders return
    assert sum(a == "quant_config" and f.severity is Severity.WARNING
               for (_, a), f in got.items()) == 2


_CONFIGS = ("kept_config", "loose_config", "quoted_config", "named_config")


def _config_findings() -> dict[str, object]:
    files = [CORPUS / "config_keeper_cases.py", CORPUS / "reader_aux.py"]
    return {f.attr: f for f in scan(files, specs=[], jobs=1).findings if f.attr in _CONFIGS}


def test_a_config_derives_from_the_weight_its_builder_fills_a_field_from():
    got = _config_findings()
    # named, but at most a warning: the builder hands the layer's parameter on by reference
    assert {a: (got[a].severity, got[a].derives_from) for a in _CONFIGS} == {
        **{a: (Severity.WARNING, "layer.w13_weight_scale") for a in _CONFIGS},
        "named_config": (Severity.WARNING, "layer.w2_weight_scale")}
    assert "return self.quant_config.w2_scale" in got["named_config"].reader
    assert all("only as its builder's argument" in got[a].evidence for a in _CONFIGS)


@pytest.mark.parametrize(("planted", "plain"), [
    # the builder's weight is not consulted: every config is "derived from no weight" again
    ("no builder weight", set(_CONFIGS)),
    # a quoted return annotation hides the config's type: that builder gives nothing
    ("unquoted only", {"quoted_config", "named_config"}),
    # without the name attribute read, the input scale is named (the keeper reads no a1_scale)
    ("no named getattr", set()),
])
def test_canary_without_the_builder_a_config_derives_from_no_weight(monkeypatch, planted, plain):
    from derivgraph.audit.static import config_reader, evidence
    if planted == "no builder weight":
        monkeypatch.setattr(evidence, "config_reader", lambda *args: None)
    elif planted == "no named getattr":
        monkeypatch.setattr(config_reader, "_NAMED_GETATTR", re.compile(r"(?!)(a)(b)(c)(d)"))
    else:
        monkeypatch.setattr(config_reader, "_RETURNS",
                            re.compile(r"->\s*(?:Optional\[)?([A-Z]\w*)"))
    got = _config_findings()
    assert {a for a in _CONFIGS if got[a].derives_from is None
            and got[a].severity is Severity.WARNING} == plain
    if planted == "no named getattr":
        assert got["named_config"].derives_from == "layer.w13_input_scale"


_LOADED = ("wrapped_config", "defaulted_config", "ordered_config")


def _loaded_findings() -> dict[str, tuple[str | None, int | None]]:
    """attr -> (derives_from, reader line) of the configs whose fields rank loaded values."""
    files = [CORPUS / "config_keeper_cases.py", CORPUS / "reader_aux.py"]
    out = {}
    for f in scan(files, specs=[], jobs=1).findings:
        if f.attr in _LOADED:
            m = re.search(r":(\d+) in ", f.reader or "")
            out[f.attr] = (f.derives_from, int(m.group(1)) if m else None)
    return out


def _line_of(path: Path, needle: str) -> int:
    (n,) = [n for n, ln in enumerate(path.read_text().splitlines(), 1) if needle in ln]
    return n


def test_a_config_names_a_loaded_field_before_a_constructor_constant():
    keeper = CORPUS / "config_keeper_cases.py"
    # the w1 accessor is followed to the consumer's call; nothing calls with the w2 one
    w1 = _line_of(keeper, "return ops.grouped_moe(x, self.w1_scale)")
    w2 = _line_of(keeper, "return self.quant_config.w2_scale")
    accessor = _line_of(keeper, "return self.quant_config.w1_scale")
    assert _loaded_findings() == {
        # the builder wraps a helper of another file: the helper's weight field, not the
        # builder's own keyword (the layer's constructor constant ``swiglu_alpha``); the
        # helper is imported from nowhere and its file imports no experts, so no consumer is
        # tied to the construction and the accessor is kept (evid25)
        "wrapped_config": ("layer.w13_weight_scale", accessor),
        # ``getattr(layer, "x", None)`` is read whole, not cut at its first comma
        "defaulted_config": ("layer.w13_weight_scale", w1),
        # the constant field comes first in the call and the keeper reads it, yet the weight
        # scale is named with its read
        "ordered_config": ("layer.w2_weight_scale", w2),
    }


@pytest.mark.parametrize(("planted", "wrong"), [
    # every attribute counts as loaded: the constant is named with the keeper's read of it
    ("no loaded ranking", {"wrapped_config": "layer.swiglu_alpha",
                           "ordered_config": "layer.swiglu_alpha"}),
    # keyword values cut at their first comma (the old reading): no weight in getattr(x, "n", d)
    ("cut values", {"wrapped_config": None, "defaulted_config": None}),
    # the wrapped helper is not followed: the builder's constant is all there is
    ("no helper", {"wrapped_config": "layer.swiglu_alpha"}),
])
def test_canary_without_the_loaded_ranking_a_constant_or_nothing_is_named(
        monkeypatch, planted, wrong):
    from derivgraph.audit.static import config_reader
    if planted == "no loaded ranking":
        monkeypatch.setattr(config_reader, "computed_weight", lambda *args: True)
        monkeypatch.setattr(config_reader, "preferrer", lambda index: lambda attr: True)
    elif planted == "cut values":
        monkeypatch.setattr(config_reader, "_keywords", lambda source: (
            k.groups() for k in config_reader._KEYWORD.finditer(source)))
    else:
        monkeypatch.setattr(config_reader, "_wrapped_helper", lambda *args: "")
    got = _loaded_findings()
    assert {a: got[a][0] for a in wrong} == wrong


def test_a_scale_product_derives_from_the_loaded_scale_not_the_softmax_scale(monkeypatch):
    path = CORPUS / "scale_product_cases.py"

    def weight() -> str | None:
        (f,) = [f for f in scan([path], specs=[], jobs=1).findings if f.attr == "softmax_scale"]
        assert f.severity is Severity.ERROR
        return f.derives_from

    # ``self.scale`` comes first, but only a constructor sets it; post-load code computes
    # ``_q_scale_float`` from a loaded tensor
    assert weight() == "layer._q_scale_float"
    from derivgraph.audit.static import computed_after_load
    monkeypatch.setattr(computed_after_load, "computed_after_load", lambda index, attr: True)
    assert weight() == "self.scale"  # canary: without the rule, the softmax scale is named


def test_computed_after_load_reads_registrations_and_post_load_stores():
    from derivgraph.audit.static.computed_after_load import computed_after_load
    from derivgraph.audit.static.readers import ReaderIndex
    text = ("class L:\n    def __init__(self, a, s):\n        self.alpha = a\n"
            "        self.register_buffer('tmp', s, persistent=False)\n"
            "    def create_weights(self):\n"
            "        self.register_parameter('w_scale', None)\n"
            "    def process_weights_after_loading(self, layer):\n"
            "        layer.q_float = layer.q.item()\n"
            "        self.tmp.mul_(2); self.alpha2 = self.alpha\n"
            "    def forward(self, x):\n        return x * self.w_scale\n")
    index = ReaderIndex([("m.py", text)], [], lambda c: frozenset({c}))
    assert {a: computed_after_load(index, a) for a in ("alpha", "tmp", "w_scale", "q_float")} \
        == {"alpha": False, "tmp": False, "w_scale": True, "q_float": True}


def test_cpu_only_names_and_signals():
    from derivgraph.audit.static.platforms import cpu_only, names_cpu, source_dropped

    assert names_cpu("CPUWNA16LinearKernel") and names_cpu("AMXMLAImpl")
    assert names_cpu("dispatch_cpu_unquantized_gemm") and names_cpu("bmm_cpu")
    assert not names_cpu("num_cpus") and not names_cpu("example_amxfoo")
    assert not names_cpu("cpu_or_xpu_kernel") and not names_cpu("CpuOffloadedLinear")
    body = ("def f(layer):\n    if current_platform.is_cpu():\n        layer.a = g(layer.w)\n"
            "    layer.b = g(layer.w)\n")
    assert cpu_only("m.py", (), body, 2, None, []) == "stored under a CPU platform test"
    assert cpu_only("m.py", (), body, 3, None, []) is None
    early = "def f(layer):\n    if not current_platform.is_cpu():\n        return\n    x = 1\n"
    assert cpu_only("m.py", (), early, 3, None, []) == "stored under a CPU platform test"
    # a comment in the body does not make the signature CPU-only
    assert cpu_only("m.py", (), "def f(x):  # runs on cpu\n    y = 1\n", 1, None, []) is None
    # a kept scale copied, not emptied: a kernel-format reload leaves the copy stale
    assert source_dropped("self.w1_scale", "self._s = self.w1_scale.float()\n", {}) is None
    assert source_dropped("self.w1_scale", "p.data = torch.empty(0)\n", {})
    assert source_dropped("self.proj", "", {"m.py": "x = 1\nself.proj.weight = "
                                            "self.proj.weight.new_empty(0)"}) == (
        "`proj`'s parameter is emptied at m.py:2: a reload into it raises (0 elements, not the "
        "checkpoint's shape) instead of leaving this stale")
    assert source_dropped(None, "", {})
