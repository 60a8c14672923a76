"""Weight lineage followed back through locals (``lineage_cases.py``): several locals deep, through
``getattr(module, "weight")`` and a helper handed the module; a name for metadata
(``weight_type``) is not a weight; a CPU-only pack whose source parameter is emptied says that a
reload raises rather than going stale (vLLM 0.33.0: AMX MLA ``_w_uk_packed``)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from derivgraph.audit.static import readers
from derivgraph.audit.static.scan import scan
from derivgraph.audit.static.semantics import Severity
from tests.audit.static.expectations import EVIDENCE_CORPUS as CORPUS
from tests.audit.static.expectations import planted_copy

NAME = "lineage_cases.py"


def _findings(path: Path) -> dict[str, object]:
    return {f.attr: f for f in scan([path], specs=[], jobs=1).findings}


def test_a_pack_several_locals_from_getattr_of_a_module_weight_is_an_error():
    f = _findings(CORPUS / NAME)["_w_lineage_packed"]
    assert (f.severity, f.derives_from) == (Severity.ERROR, "self.up_proj.weight")


def test_a_workspace_sized_from_weight_type_metadata_stays_a_warning():
    f = _findings(CORPUS / NAME)["_lineage_workspace"]
    assert (f.severity, f.derives_from) == (Severity.WARNING, None)


def test_a_cpu_pack_of_an_emptied_source_says_a_reload_raises():
    f = _findings(CORPUS / NAME)["_w_amx_packed"]
    assert (f.severity, f.derives_from) == (Severity.INFO, "self.kv_up_proj.weight")
    assert re.search(r"`kv_up_proj`'s parameter is emptied at \S+lineage_cases\.py:\d+: a reload "
                     r"into it raises", f.evidence)


def test_canary_one_local_back_loses_the_weight(monkeypatch):
    monkeypatch.setattr(readers, "LOCAL_HOPS", 1)
    f = _findings(CORPUS / NAME)["_w_lineage_packed"]
    assert (f.severity, f.derives_from) == (Severity.WARNING, None)


def test_canary_metadata_names_read_as_weights_make_the_workspace_an_error(monkeypatch):
    monkeypatch.setattr(readers, "_META_NAME", re.compile(r"(?!)"))
    f = _findings(CORPUS / NAME)["_lineage_workspace"]
    assert (f.severity, f.derives_from) == (Severity.ERROR, "self.config.weight_type")


def test_canary_a_cpu_pack_whose_source_is_kept_stays_loud(tmp_path):
    """Without the line emptying ``kv_up_proj.weight`` a kernel-format reload refills the source
    but not the pack: stale even on the CPU, so not lowered to info."""
    old = "        self.kv_up_proj.weight.data = self.kv_up_proj.weight.new_empty(0)\n"
    path = planted_copy(CORPUS / NAME, tmp_path, old, "        pass\n")
    f = _findings(path)["_w_amx_packed"]
    assert f.severity is Severity.ERROR and "emptied" not in f.evidence


@pytest.fixture(scope="module")
def vllm_report():
    pytest.importorskip("vllm")
    return scan(package="vllm")


def test_vllm_amx_mla_packs_derive_from_kv_b_proj_weight_which_mla_empties(vllm_report):
    got = {f.attr: f for f in vllm_report.findings if f.file.endswith("mla/amx_mla.py")}
    for attr in ("_w_uk_packed", "_w_uv_packed", "_w_scale"):
        f = got[attr]
        assert (f.severity, f.derives_from) == (Severity.INFO, "self.kv_b_proj.weight"), attr
        assert ("`kv_b_proj`'s parameter is emptied at "
                "vllm/model_executor/layers/attention/mla_attention.py:1251: a reload into it "
                "raises") in f.evidence, attr
