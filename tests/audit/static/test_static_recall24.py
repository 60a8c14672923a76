"""Recall classes of issue 21 after the v10b/v11 measurements (``recall24_cases.py`` calling
``recall24_lib.py``): state a model-loading step derives from the loaded module's tensors, a
finalizer reached through a factory's product and guarded by another attribute, and a deferred
step reached through another file's object. Each rule has a true positive, a false-positive
twin and a canary that plants the bug back."""

from __future__ import annotations

import ast
import shutil
from pathlib import Path

import pytest

from derivgraph.audit.static import module, rules
from derivgraph.audit.static.computed_after_load import _post_load_name
from derivgraph.audit.static.load_roots import derives_from_module, local_definitions
from derivgraph.audit.static.loaders import is_loader_name
from derivgraph.audit.static.scan import scan
from derivgraph.audit.static.scope import MODEL_LOAD_ROOTS, POST_LOAD_ROOTS, ROOT_FUNCTIONS
from derivgraph.audit.static.semantics import Severity
from tests.audit.static.expectations import EVIDENCE_CORPUS, planted_copy

CASES, LIB = "recall24_cases.py", "recall24_lib.py"


def _scan(folder: Path = EVIDENCE_CORPUS) -> dict[tuple[str, str], object]:
    """(file, attribute) -> finding of the two corpus files."""
    report = scan([folder / CASES, folder / LIB], specs=[], jobs=1)
    return {(Path(f.file).name, f.attr): f for f in report.findings}


def _planted(tmp_path: Path, name: str, old: str, new: str) -> dict[tuple[str, str], object]:
    dst = tmp_path / "corpus"
    dst.mkdir()
    for other in (CASES, LIB):
        shutil.copy(EVIDENCE_CORPUS / other, dst / other)
    planted_copy(EVIDENCE_CORPUS / name, dst, old, new)
    return _scan(dst)


def _line(name: str, text: str) -> int:
    source = (EVIDENCE_CORPUS / name).read_text()
    return source.count("\n", 0, source.index(text)) + 1


# ---- (a) model-loading roots with the weight-derivation filter --------------------------------

def test_state_derived_from_the_loaded_module_is_an_error_with_its_source():
    got = _scan()
    index = got[(CASES, "index")]
    assert (index.category, index.severity, index.store) == ("tensor-attr", Severity.ERROR,
                                                             "model-load-copy")
    assert index.line == _line(CASES, "self.index = rows + d2t")
    assert index.derives_from == "model.draft_to_target"
    assert f":{_line(CASES, 'buf.index_copy_(1, self.index, logits)')} " in index.reader
    scale = got[(CASES, "_k_scale")]  # a clone of the target's scale, set by a helper
    assert (scale.severity, scale.store) == (Severity.ERROR, "model-load-copy")
    assert scale.derives_from == "getattr(target_attn, name)"


def test_a_buffer_the_loading_step_fills_from_the_drafter_is_an_error_at_its_allocation():
    mask = _scan()[(CASES, "mask_state")]
    assert (mask.severity, mask.store) == (Severity.ERROR, "model-load-copy")
    assert mask.line == _line(CASES, "self.mask_state = torch.empty(")
    assert mask.derives_from == "self.model.mask_hidden"


def test_canary_a_buffer_filled_from_no_module_tensor_is_no_site(tmp_path):
    got = _planted(tmp_path, CASES, "self.mask_state.copy_(self.model.fc(self.model.mask_hidden",
                   "self.mask_state.copy_(torch.ones_like(self.model.mask_hidden")
    assert (CASES, "mask_state") not in got
    assert (CASES, "workspace") not in _scan()  # filled with ones: no site either


def test_scratch_a_model_loading_step_allocates_stays_info():
    got = _scan()
    buf = got[(CASES, "scatter_buf")]
    assert (buf.severity, buf.store) == (Severity.INFO, "model-load-kept")
    assert (CASES, "vocab") not in got and (CASES, "draft_map") not in got


def test_canary_a_scratch_buffer_computed_from_the_drafter_map_is_an_error(tmp_path):
    got = _planted(tmp_path, CASES, 'float("-inf"), device=d2t.device)',
                   'float("-inf"), device=d2t.device) * d2t')
    assert got[(CASES, "scatter_buf")].severity is Severity.ERROR


def test_canary_without_the_filter_the_scratch_buffer_is_loud(monkeypatch):
    monkeypatch.setattr(rules, "derives_from_module", lambda value, defs, imports: "m.weight")
    assert _scan()[(CASES, "scatter_buf")].severity is not Severity.INFO


def test_canary_without_the_root_the_derived_index_is_missed(tmp_path):
    got = _planted(tmp_path, CASES, "def load_draft_model(", "def prepare_draft(")
    assert not {(CASES, "index"), (CASES, "_k_scale"), (CASES, "mask_state")} & set(got)


@pytest.mark.parametrize(("source", "expected"), [
    ("d = m.d2t\nv = torch.arange(d.shape[0], device=d.device) + d", "m.d2t"),
    ("t = getattr(a, n)\nv = t.detach().clone()", "getattr(a, n)"),
    ("v = self.model.fc(self.model.mask_hidden.view(-1))", "self.model.mask_hidden"),
    ("v = torch.zeros(4, device=m.weight.device)", None),  # scratch
    ("v = torch.arange(m.weight.shape[0]) * 2", None),  # a shape only
    ("v = self.model.fc(x)", None),  # a module call on no tensor of an object
])
def test_derives_from_module_on_text(source: str, expected: str | None):
    func = ast.parse(f"def f(self, x):\n    {source.replace(chr(10), chr(10) + '    ')}")
    value = func.body[0].body[-1].value
    assert derives_from_module(value, local_definitions(func), {"torch": "torch"}) == expected


# ---- (b)/(c) calls through an attribute chain to the imported class defining the method ------

def test_finalizer_through_a_factory_product_and_compressor_cache_are_errors():
    got = _scan()
    gamma = got[(LIB, "_gamma")]
    assert (gamma.severity, gamma.derives_from) == (Severity.ERROR, "self.post_norm.weight")
    assert gamma.via[-1] == "GuardedExperts.finalize"
    norm = got[(LIB, "norm_fp32")]
    assert (norm.severity, norm.derives_from) == (Severity.ERROR, "self.norm.weight")
    assert norm.via == ("CompressedAttention.process_weights_after_loading",
                        "CachedCompressor.cache_norm")


def test_a_method_only_a_class_the_file_does_not_import_defines_is_not_followed():
    assert (LIB, "scale_fp32") not in _scan()


def test_canary_importing_the_other_kernel_follows_its_method(tmp_path):
    got = _planted(tmp_path, CASES, "CachedCompressor, GuardedExperts, PlainCompressor",
                   "CachedCompressor, GuardedExperts, OtherKernel, PlainCompressor")
    assert got[(LIB, "scale_fp32")].severity is not Severity.INFO


def test_canary_without_the_imported_owners_both_sites_are_missed(monkeypatch):
    monkeypatch.setattr(module, "_known_owners", lambda *args: [])
    got = _scan()
    assert (LIB, "_gamma") not in got and (LIB, "norm_fp32") not in got


# ---- one implementation of the post-load names --------------------------------------------------

def test_post_load_names_are_the_scope_roots_and_the_loader_rule():
    assert ROOT_FUNCTIONS == POST_LOAD_ROOTS | MODEL_LOAD_ROOTS
    for name in POST_LOAD_ROOTS:
        assert _post_load_name(name)
    for name in ("weight_loader", "_moe_weight_loader", "load_weight", "load_expert_weights"):
        assert is_loader_name(name) and _post_load_name(name)
    for name in ("load_model", "load_draft_model", "forward", "finalize_weights"):
        assert not _post_load_name(name)


# ---- (d) the loader's module-level driver is an initial-load root -------------------------------

def test_the_module_level_driver_is_initial_load_only():
    got = _scan()
    tie = got[(CASES, "weight")]
    assert (tie.severity, tie.store) == (Severity.INFO, "initial-load-kept")
    copy = got[(CASES, "head_fp32")]
    assert (copy.severity, copy.store) == (Severity.ERROR, "initial-load-copy")


def test_canary_a_driver_not_handed_the_model_is_judged_as_rerunning(tmp_path):
    got = _planted(tmp_path, CASES, "def process_weights_after_loading(model, model_config):",
                   "def process_weights_after_loading(layer, model, model_config):")
    assert got[(CASES, "weight")].store == "reference"  # a reference a rerun may leave stale
    assert got[(CASES, "head_fp32")].store == "layer-attribute"
