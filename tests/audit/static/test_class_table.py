"""The committed outcome table of the undeclared error classes and its generated doc section."""

from __future__ import annotations

import copy
import json

import pytest

from vllm_integration.class_table import DOC, TABLE, main, render, splice, undeclared_error_classes


def _rows():
    return json.loads(TABLE.read_text())["classes"]


def test_the_doc_section_renders_the_committed_table(capsys):
    assert main(["--check"]) == 0
    assert "doc matches the table" in capsys.readouterr().out


def test_canary_an_edited_outcome_shows_in_the_doc():
    rows = _rows()
    planted = copy.deepcopy(rows)
    blocked = next(r for r in planted if r["outcome"] == "blocked")
    blocked["outcome"], blocked["verdicts"] = "ran", {"x": {"observed": "moved",
                                                            "verdict": "confirmed"}}
    doc = DOC.read_text()
    assert splice(doc, render(rows)) == doc
    assert splice(doc, render(planted)) != doc


def test_every_class_has_a_case_and_an_observed_outcome():
    # the one class without a case: Quark OCP MX MoE, an error since weight lineage follows
    # its tuple-unpacked conversion of the layer's weights (rules21c); its GPT-OSS MXFP4
    # siblings (mxfp4.py) were tried and blocked
    # the recall classes after v9 (rules22) added two without a case yet: the CPU GEMM step's
    # closures (dispatch_cpu_unquantized_gemm) and the ROCm AITER FA metadata builder's tables
    # the recall classes after v10b/v11 (rules24) added six without a case yet: a model's
    # fused buffers built by its loader, the CPU compressor's and the MegaMoE finalizer's
    # copies, and three speculator/proposer model-loading copies (no CPU drafter path here)
    # the recall classes of rules26 added one: the prefetch offloader's pinned CPU staging
    # copy (its prefetch streams need CUDA); rules28 one: the Marlin kernel's `bias` rebind (a
    # CUDA kernel, no CPU path); rules29 one: the experts base class keeping the rebuilt quant
    # config (modular_kernel.py:524; its readers are CUDA experts)
    untried = [r["class"].rpartition(".")[2] for r in _rows() if r["outcome"] == "no case"]
    assert untried == ["MarlinLinearKernel", "FusedMoEExperts", "QuarkOCP_MX_MoEMethod",
                       "dispatch_cpu_unquantized_gemm", "XPressRefinerHead", "_CpuParamOffloader",
                       "DeepseekV4CPUCompressor", "MuseSparkMegaMoEExperts",
                       "AiterFlashAttentionMetadataBuilder", "SpecDecodeBaseProposer",
                       "DSparkSpeculator", "_copy_target_kv_scales"]
    for row in _rows():
        if row["outcome"] == "no case":
            assert not row["case"] and not row["verdicts"] and not row["blocker"], row["class"]
            continue
        assert row["case"], row["class"]
        # every finding of the class has its verdict (observed, or not run when blocked)
        assert set(row["verdicts"]) == {f["attr"] for f in row["findings"]}, row["class"]
        if row["outcome"] == "blocked":
            b = row["blocker"]
            assert b["exception"] and b["message"], row["class"]
            assert b["in_vllm"] == (b["first_vllm_frame"] is not None)
        else:
            assert row["verdicts"], row["class"]


@pytest.mark.slow
def test_the_table_covers_exactly_the_undeclared_error_classes():
    from derivgraph.audit.static.scan import scan
    from derivgraph.spec.load import default_specs

    pytest.importorskip("vllm")
    classes = undeclared_error_classes(scan(package="vllm", specs=default_specs()).findings)
    assert {r["class"] for r in _rows()} == set(classes)
    for row in _rows():
        assert {(f["line"], f["attr"]) for f in row["findings"]} == {
            (f.line, f.attr) for f in classes[row["class"]]}


def test_the_outcome_counts_and_every_blocker_is_inside_vllm():
    from collections import Counter

    rows = _rows()
    # 16 ran, three of them the loader-bypass classes (Inkling AMD/NVIDIA sinks, LongCat n-gram)
    # and one the Kimi-K3 projection handed a padded copy
    # (the Flint NVFP4 experts left the table with issue 21: their `weights` is info now)
    # (rules28 added the Marlin kernel's `bias` rebind, rules29 the experts base class's kept
    # quant config: no executable case)
    assert Counter(r["outcome"] for r in rows) == {"ran": 16, "reload failed": 1, "blocked": 16,
                                                   "no case": 12}
    # every blocked class was tried as far as vLLM's own code goes here: no try stops in
    # the harness around it
    assert all(r["blocker"]["in_vllm"] for r in rows if r["outcome"] == "blocked")
    # a decode step that stopped at a GPU step did so after its cache fill, inside vLLM
    stopped = {r["case"]: r["forward_stop"] for r in rows if r.get("forward_stop")}
    assert set(stopped) == {"mla-flashinfer", "mla-tokenspeed"}
    assert all(s["in_vllm"] and s["exception"] == "RuntimeError" for s in stopped.values())


def test_canary_a_forward_stop_shows_in_the_doc_row():
    rows = _rows()
    planted = copy.deepcopy(rows)
    row = next(r for r in planted if r["case"] == "mla-flashinfer-sparse")
    assert row["forward_stop"] is None
    row["forward_stop"] = {"exception": "RuntimeError", "last_vllm_frame": "vllm/x.py:1 in f",
                           "first_vllm_frame": "vllm/x.py:1 in f", "message": "m",
                           "in_vllm": True}
    assert "stopped at `vllm/x.py:1 in f`" in render(planted)
    assert "stopped at `vllm/x.py:1 in f`" not in render(rows)
