"""The built-in spec library (specs/*.yaml) loads, validates, and binds without vLLM.

The proofs against vLLM's real code are in tests/vllm/specs/test_specs_*.py; these checks need
only torch.
"""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest
import torch
from torch import nn

from derivgraph import AdoptionError, compile_plan, load_spec_file
from derivgraph.cli import main
from derivgraph.spec.load import builtin_specs

ROOT = Path(__file__).resolve().parents[2]
SPEC_DIR = ROOT / "specs"
SPEC_FILES = sorted(SPEC_DIR.glob("*.yaml"))


def test_cli_validates_the_spec_folder(monkeypatch: pytest.MonkeyPatch,
                                       capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.chdir(ROOT)
    assert main(["validate", "specs"]) == 0
    out = capsys.readouterr().out
    total = sum(len(load_spec_file(f)) for f in SPEC_FILES)
    assert out.startswith(f"ok: {total} spec(s)"), out


def test_cli_rejects_a_broken_copy(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The validation above can fail: the same files with one unknown op do not pass."""
    for f in SPEC_FILES:
        shutil.copy(f, tmp_path / f.name)
    target = tmp_path / "vllm_moe_cutlass.yaml"
    text = target.read_text()
    assert "full([E], K, dtype=int64)" in text
    target.write_text(text.replace("full([E], K, dtype=int64)", "fill([E], K)", 1))
    assert main(["validate", str(tmp_path)]) == 1
    err = capsys.readouterr().err  # errors go to stderr
    assert "DG004 unknown-op" in err and "vllm_moe_cutlass.yaml" in err


@pytest.mark.parametrize("path", SPEC_FILES, ids=[f.name for f in SPEC_FILES])
def test_each_file_loads_with_metadata(path: Path) -> None:
    specs = load_spec_file(path)
    assert specs, f"{path.name} declares no spec"
    for spec in specs:
        assert spec.name.startswith("vllm-"), spec.name
        assert spec.description.strip(), f"{spec.name} has no description"
        assert spec.references, f"{spec.name} has no references"
        for ref in spec.references:
            assert re.fullmatch(r"vllm#\d+", ref), f"{spec.name}: reference {ref!r}"
        assert spec.location.file == str(path) and spec.location.line > 0
        for d in spec.derived:
            # a tensor kind never silently becomes a module registration on a plain object
            if d.kind in ("parameter", "buffer"):
                assert d.owner == "", f"{spec.name}:{d.name} registers on a non-module owner"


def test_builtin_specs_are_the_spec_folder() -> None:
    """The package resource derivgraph.spec_library resolves to these files, names are unique."""
    from_files = [s.name for f in SPEC_FILES for s in load_spec_file(f)]
    shipped = [s.name for s in builtin_specs()]
    assert sorted(shipped) == sorted(from_files)
    assert len(set(shipped)) == len(shipped)


# ---- binding without vLLM: stand-ins named like vLLM's classes --------------------------------

class CutlassExpertsFp8Base:
    """Stand-in with vLLM's constructor body (experts/cutlass_moe.py:282-310)."""

    def __init__(self, e: int, n: int, k: int):
        self.ab_strides1 = torch.full((e,), k, dtype=torch.int64)
        self.ab_strides2 = torch.full((e,), n, dtype=torch.int64)
        self.c_strides1 = torch.full((e,), 2 * n, dtype=torch.int64)
        self.c_strides2 = self.ab_strides1
        self.moe_config = type("Cfg", (), {"num_local_experts": e, "hidden_dim": k,
                                           "intermediate_size_per_partition": n})()


class FlashInferExperts:
    def __init__(self, e: int, alpha: float | None):
        self.num_experts = e
        self.quant_config = type("QC", (), {"gemm1_alpha": alpha, "gemm1_beta": None,
                                            "gemm1_clamp_limit": None,
                                            "weight_quant_dtype": None, "quant_dtype": None})()
        self.gemm1_alpha = None if alpha is None else torch.full((e,), alpha)
        self.gemm1_beta = None
        self.gemm1_clamp_limit = None


class _Kernel:
    def __init__(self, experts: object):
        self.fused_experts = experts


class _Method:
    def __init__(self, experts: object):
        self.moe_kernel = _Kernel(experts)


class RoutedExperts(nn.Module):
    def __init__(self, experts: object):
        super().__init__()
        self.w13_weight = nn.Parameter(torch.zeros(4, 16, 8), requires_grad=False)
        self.quant_method = _Method(experts)


def _only(spec_names: set[str]) -> list:
    return [s for s in builtin_specs() if s.name in spec_names]


def test_cutlass_strides_adopt_keep_the_alias_and_refill() -> None:
    layer = RoutedExperts(CutlassExpertsFp8Base(4, 8, 32))
    old = layer.quant_method.moe_kernel.fused_experts
    plan = compile_plan(layer, builtin_specs())
    prefix = "quant_method.moe_kernel.fused_experts."
    names = ("ab_strides1", "ab_strides2", "c_strides1", "c_strides2")
    assert sorted(plan.entries) == sorted(prefix + n for n in names)
    assert all(e.adopted for e in plan.entries.values())
    assert plan.entries[prefix + "c_strides2"].storage is old.ab_strides1
    assert torch.equal(old.c_strides1, torch.full((4,), 16, dtype=torch.int64))

    layer.quant_method.moe_kernel = _Kernel(CutlassExpertsFp8Base(4, 8, 32))  # a rebuild
    assert plan.moved()
    report = plan.refill(verify=True)
    assert report.moved == []
    new = layer.quant_method.moe_kernel.fused_experts
    for name in names:
        assert getattr(new, name) is getattr(old, name)
    assert new.c_strides2 is new.ab_strides1


def test_a_wrong_stride_is_refused() -> None:
    experts = CutlassExpertsFp8Base(4, 8, 32)
    experts.c_strides1 = torch.full((4,), 8, dtype=torch.int64)  # N instead of 2N
    with pytest.raises(AdoptionError, match="c_strides1"):
        compile_plan(RoutedExperts(experts), builtin_specs())


def test_gated_constant_binds_only_when_the_engine_built_it() -> None:
    spec = {"vllm-flashinfer-cutlass-gemm1-alpha"}
    absent = RoutedExperts(FlashInferExperts(4, None))
    assert len(compile_plan(absent, builtin_specs())) == 0
    assert absent.quant_method.moe_kernel.fused_experts.gemm1_alpha is None
    present = RoutedExperts(FlashInferExperts(4, 1.702))
    plan = compile_plan(present, _only(spec), require_match=True)
    entry = plan.entries["quant_method.moe_kernel.fused_experts.gemm1_alpha"]
    assert entry.adopted
    assert torch.equal(entry.storage, torch.full((4,), 1.702))
