"""``derivgraph trace --package vllm`` end to end over the real ``vllm_integration.builders``.

Every case the builders know is run: the buildable ones (vLLM 0.33.0's own quant-config
builders, experts constructors and ``make_fp8_moe_kernel`` on CPU, two layers each) are traced
whole, proven A->B->A through vLLM's real layerwise reload, written, and checked here entry by
entry (owner, name, kind, formula or alias target); the one that cannot run on CPU is reported
with vLLM's own reason. The written drafts load and validate.
"""

from __future__ import annotations

import contextlib
import io
import json
from pathlib import Path

import pytest

pytestmark = [pytest.mark.vllm, pytest.mark.slow]
pytest.importorskip("vllm")

from derivgraph import load_spec_file  # noqa: E402
from derivgraph.cli import main  # noqa: E402
from derivgraph.spec.check import check_specs as validate_specs  # noqa: E402

FE, QC = "quant_method.moe_kernel.fused_experts", "quant_method.moe_quant_config"
E, K, N = "w13_weight_d0", "w13_weight_d1", "w2_weight_d2"  # names the trace gives E, 2N/H, N

#: what the quant config of every FP8 case holds: the checkpoint scales themselves
_FP8_SCALES = {
    (f"{QC}._a1", "scale"): ("alias", "w13_input_scale"),
    (f"{QC}._w1", "scale"): ("alias", "w13_weight_scale"),
    (f"{QC}._a2", "scale"): ("alias", "w2_input_scale"),
    (f"{QC}._w2", "scale"): ("alias", "w2_weight_scale"),
}


def _strides(owner: str) -> dict[tuple[str, str], tuple[str, str]]:
    """CUTLASS strides: constants over the expert count, ``c_strides2 is ab_strides1``."""
    return {
        (owner, "ab_strides1"): ("attribute", f"full([{E}], {K}, dtype=int64)"),
        (owner, "c_strides2"): ("alias", "ab_strides1"),
        (owner, "ab_strides2"): ("attribute", f"full([{E}], {N}, dtype=int64)"),
        (owner, "c_strides1"): ("attribute", f"full([{E}], {K}, dtype=int64)"),
    }


EXPECTED: dict[str, dict[tuple[str, str], tuple[str, str]]] = {
    "fp8-moe-cutlass": {**_strides(FE), **_FP8_SCALES},
    "fp8-moe-triton-or-cutlass": {**_strides("quant_method.experts.experts"), **_FP8_SCALES},
    "fp8-moe-trtllm": {
        (FE, "_g1_alphas"): ("attribute", "squeeze(w13_weight_scale * w13_input_scale)"),
        (FE, "_g1_scale_c"): ("attribute",
                              "squeeze(w13_weight_scale * w13_input_scale) / w2_input_scale"),
        (FE, "_g2_alphas"): ("attribute", "squeeze(w2_weight_scale * w2_input_scale)"),
        **_FP8_SCALES,
    },
    "fp8-moe-flashinfer-cutlass": {  # make_fp8_moe_quant_config(layer=) registers g1/g2_alphas
        ("", "g1_alphas"): ("parameter", "w13_weight_scale * w13_input_scale"),
        ("", "g2_alphas"): ("parameter", "w2_weight_scale * w2_input_scale"),
        (f"{QC}._w1", "alpha_or_gscale"): ("alias", "g1_alphas"),
        (f"{QC}._w2", "alpha_or_gscale"): ("alias", "g2_alphas"),
        (f"{QC}._a1", "alpha_or_gscale"): ("attribute", "reciprocal(w13_input_scale)"),
        (f"{QC}._a2", "alpha_or_gscale"): ("attribute", "reciprocal(w2_input_scale)"),
        **_FP8_SCALES,
    },
    "nvfp4-moe-flashinfer-cutlass": {
        (f"{QC}._a1", "alpha_or_gscale"): ("attribute", "reciprocal(w13_input_scale)"),
        (f"{QC}._a2", "alpha_or_gscale"): ("attribute", "reciprocal(w2_input_scale)"),
        (f"{QC}._w1", "scale"): ("alias", "w13_weight_scale"),
        (f"{QC}._w2", "scale"): ("alias", "w2_weight_scale"),
        (f"{QC}._w1", "alpha_or_gscale"): ("alias", "w13_weight_scale_2"),
        (f"{QC}._w2", "alpha_or_gscale"): ("alias", "w2_weight_scale_2"),
    },
}
EXPECTED["int8-moe-zen-cpu"] = {  # checkpoint dtypes already f32/bf16: the experts' copies alias
    ("quant_method.experts", "_w1_bias_bf16"): ("alias", "w13_bias"),
    ("quant_method.experts", "_w1_scale_f32"): ("view", "reshape(w13_weight_scale, [4, -1])"),
    ("quant_method.experts", "_w2_bias_bf16"): ("alias", "w2_bias"),
    ("quant_method.experts", "_w2_scale_f32"): ("view", "reshape(w2_weight_scale, [4, -1])"),
    (f"{QC}._w1", "bias"): ("alias", "w13_bias"),
    (f"{QC}._w1", "scale"): ("alias", "w13_weight_scale"),
    (f"{QC}._w2", "bias"): ("alias", "w2_bias"),
    (f"{QC}._w2", "scale"): ("alias", "w2_weight_scale"),
}
NOT_RUNNABLE = {"fp8-linear": "Fp8LinearMethod"}


@pytest.fixture(scope="module")
def package(tmp_path_factory: pytest.TempPathFactory) -> tuple[int, dict[str, dict], Path]:
    out = tmp_path_factory.mktemp("drafts")
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        code = main(["trace", "--package", "vllm", "--json", "-o", str(out)])
    rows = {r["name"]: r for r in json.loads(buf.getvalue())}
    return code, rows, out


def test_every_builders_case_is_run_or_reported(package) -> None:
    from vllm_integration import builders

    code, rows, _ = package
    assert code == 0  # every buildable case is proven
    assert set(rows) == {c.name for c in builders.cases()}
    assert set(rows) == set(EXPECTED) | set(NOT_RUNNABLE)
    for name, why in NOT_RUNNABLE.items():
        assert set(rows[name]) == {"name", "not_runnable"}
        assert rows[name]["not_runnable"].startswith(why)


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_case_draft_entries_and_proof(package, name: str) -> None:
    _, rows, out = package
    row = rows[name]
    want = EXPECTED[name]
    assert row["proven"], row["proof"]
    assert row["specs"] == [{"name": f"traced-{name}-case-layer", "module_class": "CaseLayer",
                             "instances": 2, "derived": len(want)}]
    assert f"proof ok: {2 * len(want)} declared" in row["proof"]
    assert row["proof"].count("moved 0, mismatched 0") == 4
    assert row["not_expressible"] == [] and row["ops_to_register"] == []
    assert row["sources_replaced"] == [] and row["unproven"] == []
    assert row["written"] == str(out / f"{name}.yaml")

    specs = load_spec_file(out / f"{name}.yaml")
    assert validate_specs(specs) == []
    (spec,) = specs
    assert list(spec.target.module_class) == ["CaseLayer"]
    assert list(spec.target.quant_method_class) == ["CaseMethod"]
    got = {}
    for d in spec.derived:
        kind = d.kind.value if hasattr(d.kind, "value") else str(d.kind)
        got[(d.owner or "", d.name)] = (kind, d.of if kind == "alias" else d.formula)
    assert got == want


def test_written_drafts_validate_as_a_folder(package) -> None:
    _, _, out = package
    assert sorted(p.stem for p in out.glob("*.yaml")) == sorted(EXPECTED)
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        assert main(["validate", str(out)]) == 0
