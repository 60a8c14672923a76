"""Issue 21: classes of the eighth outside precision review's false positives, each a rule with
a true-positive twin in the evidence corpus and a canary that plants the signal back."""

from __future__ import annotations

import shutil
from pathlib import Path

from derivgraph.audit.static.first_run import first_run_guard, references_only
from derivgraph.audit.static.loaders import pooler_only
from derivgraph.audit.static.readers import ReaderIndex
from derivgraph.audit.static.scan import scan
from derivgraph.audit.static.semantics import Severity
from derivgraph.audit.static.tensor_free import tensor_free_builder
from tests.audit.static.expectations import EVIDENCE_CORPUS, planted_copy


def _scan(path: Path) -> dict[tuple[str | None, str], object]:
    return {(f.cls, f.attr): f for f in scan([path], specs=[], jobs=1).findings}


def _planted(tmp_path: Path, name: str, old: str, new: str) -> dict[tuple[str | None, str], object]:
    dst = tmp_path / "corpus"
    shutil.copytree(EVIDENCE_CORPUS, dst)
    return _scan(planted_copy(EVIDENCE_CORPUS / name, dst, old, new))


# ---- a container whose builder reads no layer, no torch and no tensor attribute ----------------

def test_tensor_free_builder_is_info_and_its_twins_stay_warnings():
    got = _scan(EVIDENCE_CORPUS / "config_cases.py")
    free = got[("BlockCodecMethod", "quant_config")]
    assert free.severity is Severity.INFO and "dtypes and scalars only" in free.evidence
    assert got[("GroupedFp8Method", "quant_config")].severity is Severity.WARNING  # reads layer
    assert got[("PrecisionMethod", "quant_config")].severity is Severity.WARNING  # tensor attr


def test_canary_a_builder_reading_the_layer_holds_tensors_again(tmp_path):
    got = _planted(tmp_path, "config_cases.py",
                   "        return GroupedQuantConfig(CodecDescriptor(dtype=self.codec),\n",
                   "        return GroupedQuantConfig(CodecDescriptor(layer.w13_weight_scale),\n")
    assert got[("BlockCodecMethod", "quant_config")].severity is Severity.WARNING


def test_tensor_free_builder_on_text():
    file_text = "class M:\n    def __init__(self, c):\n        self.codec = c.lower()\n" \
                "        self.scale_t = torch.ones(2)\n"
    plain = "    def make(self, layer):\n        return Cfg(dtype=self.codec)\n"
    assert tensor_free_builder("self.make(layer)", plain, file_text) == "make"
    assert tensor_free_builder("self.make(layer)", plain.replace("self.codec", "self.scale_t"),
                               file_text) is None
    assert tensor_free_builder("self.make(layer)", plain.replace("self.codec", "layer.w"),
                               file_text) is None
    assert tensor_free_builder("self.make(layer)", plain.replace("Cfg(", "torch.tensor("),
                               file_text) is None
    assert tensor_free_builder("make(layer)", plain, file_text) is None


# ---- a loader-called step that deletes the parameters it read --------------------------------

def test_loader_step_deleting_every_parameter_is_info_and_its_twin_an_error():
    got = _scan(EVIDENCE_CORPUS / "precision21_cases.py")
    dropped = got[("DroppingPackedExperts", "weights")]
    assert dropped.severity is Severity.INFO
    assert "every registered parameter" in dropped.evidence
    assert got[("KeepingPackedExperts", "weights")].severity is Severity.ERROR


def test_canary_a_loader_step_keeping_its_parameters_is_an_error_again(tmp_path):
    got = _planted(tmp_path, "precision21_cases.py",
                   "        for name in list(self._parameters):\n            delattr(self, name)\n",
                   "")
    assert got[("DroppingPackedExperts", "weights")].severity is Severity.ERROR


# ---- a loader's new Parameter on a submodule handed only to the pooler -----------------------

def test_loader_rebind_of_a_pooler_only_head_is_info_and_its_forward_twin_a_warning():
    got = _scan(EVIDENCE_CORPUS / "loader_cases.py")
    pooled = got[("PooledModel", "bias")]
    assert pooled.severity is Severity.INFO and "_init_pooler()" in pooled.evidence
    assert got[("ScoredModel", "bias")].severity is Severity.WARNING  # its forward reads score


def test_canary_a_forward_reading_the_pooled_head_is_a_warning_again(tmp_path):
    got = _planted(tmp_path, "loader_cases.py",
                   "    class PooledModel(cls):  # the score head is handed only to the pooler, "
                   "never to forward\n",
                   "    class PooledModel(cls):\n        def forward(self, x):\n"
                   "            return self.score(x)\n\n")
    assert got[("PooledModel", "bias")].severity is Severity.WARNING


def test_pooler_only_on_text():
    cls = ("class M:\n    def _init_pooler(self):\n        return P(self.score)\n\n"
           "    def load_weights(self, w):\n        self.score.bias = w\n")
    assert pooler_only("self.score", cls) == "_init_pooler"
    assert pooler_only("self.score", cls + "\n    def forward(self, x):\n"
                       "        return self.score(x)\n") is None
    assert pooler_only("self.head", cls) is None  # nothing hands it on


# ---- a config built only on the first post-load run, over references to kept parameters -------

def test_first_run_reference_config_is_info_and_its_twins_warnings():
    got = _scan(EVIDENCE_CORPUS / "precision21_cases.py")
    once = got[("OnceBiasMethod", "quant_config")]
    assert once.severity is Severity.INFO and "`self.kernel`" in once.evidence
    assert got[("RerunBiasMethod", "quant_config")].severity is Severity.WARNING  # every run
    assert got[("OnceScaledMethod", "quant_config")].severity is Severity.WARNING  # 1 / scale


def test_canary_a_config_rebuilt_on_every_run_is_a_warning_again(tmp_path):
    got = _planted(tmp_path, "precision21_cases.py",
                   "        if not is_update:\n            self._init_kernel(layer)\n",
                   "        self._init_kernel(layer)\n")
    assert got[("OnceBiasMethod", "quant_config")].severity is Severity.WARNING


def test_first_run_guard_and_references_on_text():
    cls = ("class M:\n    def setup(self, layer):\n        upd = self.k is not None\n"
           "        if not upd:\n            self._init(layer)\n\n"
           "    def _init(self, layer):\n        self.k = 1\n")
    assert first_run_guard("_init", cls) == "self.k"
    assert first_run_guard("_init", cls.replace("        self.k = 1\n", "        pass\n")) is None
    assert first_run_guard("_init", cls + "\n    def again(self, layer):\n"
                           "        self._init(layer)\n") is None  # an unguarded call
    assert first_run_guard("_init", cls.replace("        upd = self.k is not None\n"
                                                "        if not upd:\n",
                                                "        if self.k is None:\n")) == "self.k"
    initial = cls.replace("    def _init(self, layer):",
                          "    def pre(self, layer):\n        if is_weights_pre_processed():\n"
                          "            self._init(layer)\n\n    def _init(self, layer):")
    assert first_run_guard("_init", initial) == "self.k"
    assert first_run_guard("_init", initial.replace("is_weights_pre_processed", "is_ready")) is None
    ref = "    def b(self, layer):\n        a = getattr(layer, 'x', None)\n" \
          "        return mk(layer.w13_bias, alpha=a)\n"
    assert references_only(ref)
    assert not references_only(ref.replace("layer.w13_bias", "1.0 / layer.s"))
    assert not references_only(ref.replace("layer.w13_bias", "layer.s.float()"))


# ---- a weight-free value read only by a function only post-load code calls -------------------

_PREP = """class E:
    def _unit(self, n):
        buf = self._bufs.get(n)
        return buf

    def _global(self, n):
        return self._unit(n)

    def _prepare(self, *, n):
        return ops.prepare(self._unit(n), self._global(n))

    def process_weights_after_loading(self, layer):
        self._prepared = self._prepare(n=4)

    def apply(self, x):
        return ops.run(x, self._prepared)
"""


def _index(text: str) -> ReaderIndex:
    return ReaderIndex([("e.py", text)], {(0, "E", "process_weights_after_loading")},
                       lambda c: frozenset({c}))


def test_only_post_load_follows_the_callers_to_the_post_load_step():
    assert _index(_PREP).only_post_load("_unit")
    assert not _index(_PREP).only_post_load("apply")  # nothing calls it: no evidence


def test_canary_a_call_from_apply_makes_the_reader_run_after_load():
    planted = _PREP.replace("return ops.run(x, self._prepared)",
                            "return ops.run(x, self._prepared, self._global(2))")
    assert not _index(planted).only_post_load("_unit")
