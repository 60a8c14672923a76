"""`derivgraph trace`: drafts from post-load code alone, proven A->B->A, equal to hand-written.

Without vLLM: the reference modules (FP8-style MoE with a CUTLASS strides object and its alias,
reciprocal buffer, fused K/V drafter) and toy steps that plant each hard case (a dict holder,
an op outside the vocabulary, a value read through ``.tolist()``, a ``.item()`` scalar). With
vLLM: real FP8 and NVFP4 MoE quant configs and experts, CUTLASS strides (``c_strides2 is
ab_strides1``), a real drafter's fused K/V buffers, Kimi-K3 MLA's Python scalars and host scale
copies, and MLA's absorbed W_UK_T / W_UV (bf16 and FP8 block-dequantized).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pytest
import torch
from torch import nn

from derivgraph import load_spec_file
from derivgraph.cli import main
from derivgraph.tools.reference import reference_model, reference_post_load
from derivgraph.trace import trace_model
from derivgraph.trace.equivalence import compare_specs
from derivgraph.trace.proof import CheckpointReload


def _entries(outcome):
    return {(s.name, e.owner, e.name): e for s in outcome.draft.specs for e in s.entries}


def _by_name(outcome, name, owner=""):
    hits = [e for s in outcome.draft.specs for e in s.entries
            if e.name == name and e.owner == owner]
    assert len(hits) == 1, (name, owner, [e for s in outcome.draft.specs for e in s.entries])
    return hits[0]


# ---- reference modules -----------------------------------------------------------------------

@pytest.fixture(scope="module")
def reference():
    return trace_model(reference_model, reference_post_load, "reference")


def test_reference_draft_is_proven_and_generalised(reference):
    assert reference.proof.ok, reference.proof.summary()
    assert reference.proof.declared == 27 and reference.proof.changed == 19
    assert all(not s["moved"] and not s["mismatched"] for s in reference.proof.stages)
    specs = {s.module_class: s for s in reference.draft.specs}
    assert set(specs) == {"RefMoE", "RefAttention", "RefDrafter"}
    # one spec per class, not one per layer
    assert specs["RefMoE"].instances == ["layers.0.moe", "layers.1.moe"]
    assert specs["RefMoE"].quant_method_class == "RefFp8MoEMethod"
    fe = "quant_method.moe_kernel.fused_experts"
    assert _by_name(reference, "c_strides2", fe).kind == "alias"
    assert _by_name(reference, "c_strides2", fe).of == "ab_strides1"
    assert _by_name(reference, "ab_strides1", fe).formula == (
        "full([num_experts], hidden, dtype=int64)")
    assert specs["RefMoE"].params["num_experts"] == "num_experts"
    qc = "quant_method.moe_quant_config"
    assert _by_name(reference, "alpha_or_gscale", f"{qc}._a1").formula == (
        "reciprocal(w13_input_scale)")
    assert _by_name(reference, "alpha_or_gscale", f"{qc}._w1").formula == (
        "w13_weight_scale * w13_input_scale")
    assert _by_name(reference, "scale", f"{qc}._w2").of == "w2_weight_scale"
    buf = _by_name(reference, "_q_scale_inv")
    assert (buf.kind, buf.formula) == ("buffer", "reshape(reciprocal(q_scale), [1])")
    assert _by_name(reference, "_fused_kv_weight").formula == (
        "cat([w[q_size:] for w in each('layers.*.qkv_proj.weight')], 0)")
    assert not reference.draft.unexpressed


def test_reference_trace_equals_hand_written(reference):
    from derivgraph import load_specs
    from derivgraph.tools.reference_models import reference_spec_path

    one, two = (CheckpointReload(reference_model, reference_post_load) for _ in range(2))
    result = {c.module_class: c for c in compare_specs(
        load_specs([reference_spec_path()]), reference.specs, one.make, (one.reload, two.reload))}
    assert set(result) == {"RefMoE", "RefAttention", "RefDrafter"}
    for cmp in result.values():
        assert cmp.equivalent, cmp.describe()
    assert len(result["RefMoE"].hand) == 24


def test_compare_goes_red_on_a_wrong_formula(reference):
    """Canary: a traced spec with one wrong value must not compare equivalent."""
    from derivgraph import load_spec_text, load_specs
    from derivgraph.tools.reference_models import reference_spec_path

    bad = load_spec_text(reference.yaml.replace('"reciprocal(w13_input_scale)"',
                                                '"reciprocal(w2_input_scale)"'))
    one, two = (CheckpointReload(reference_model, reference_post_load) for _ in range(2))
    # compile adopts the engine's value bit-exactly, so the wrong formula fails at compile
    result = compare_specs(load_specs([reference_spec_path()]), bad, one.make,
                           (one.reload, two.reload))
    assert not any(c.equivalent for c in result)
    assert "adoption" in result[0].error


# ---- toy steps: each hard case planted -------------------------------------------------------

@dataclass(frozen=True)
class Desc:
    scale: torch.Tensor
    inv: torch.Tensor


class Holder:
    pass


class Toy(nn.Module):
    def __init__(self, mode: str):
        super().__init__()
        self.mode = mode
        g = torch.Generator().manual_seed(7)
        self.w = nn.Parameter(torch.rand(4, 6, generator=g) + 0.5, requires_grad=False)
        self.s = nn.Parameter(torch.rand((), generator=g) + 0.5, requires_grad=False)
        self.kernel = Holder()
        self.host_cpu = torch.tensor(1.0)  # a host copy made at construction (vLLM's)

    def process_weights_after_loading(self) -> None:
        k = self.kernel
        k.desc = Desc(scale=self.s, inv=1.0 / self.s)          # frozen dataclass + alias
        k.table = {"wt": self.w.t().contiguous()}             # dict item
        k.first = self.w[1:]                                   # a view of a parameter
        k.rows = [self.w.amax()]                               # a list item: no name
        self.s_float = self.s.item()                           # a Python scalar
        if self.mode == "opaque":
            k.cum = self.w.cumsum(0)                           # not in our vocabulary
        if self.mode == "tolist":
            k.host = torch.tensor(self.s.tolist())             # a copy the recording misses
        if self.mode == "tolist-doubled":
            k.host = torch.tensor(self.s.tolist() * 2.0)       # and Python arithmetic on it
        if self.mode == "fill":  # vLLM's _k_scale_cpu: filled in place from .tolist()
            self.host_cpu.fill_(self.s.tolist())


def test_toy_hiding_places_scalar_and_alias():
    out = trace_model(lambda: Toy("plain"), lambda m: m.process_weights_after_loading(), "toy")
    assert out.proof.ok, out.proof.summary() + out.yaml
    assert _by_name(out, "scale", "kernel.desc").kind == "alias"
    assert _by_name(out, "scale", "kernel.desc").of == "s"
    assert _by_name(out, "inv", "kernel.desc").formula == "reciprocal(s)"  # what 1.0 / s runs
    assert _by_name(out, "wt", "kernel.table").formula == "contiguous(t(w))"
    first = _by_name(out, "first", "kernel")
    assert (first.kind, first.formula) == ("view", "w[1:]")
    assert [u.path for u in out.draft.unexpressed] == ["kernel.rows.0"]
    assert "no name a spec can declare" in out.draft.unexpressed[0].reason
    scalar = _by_name(out, "s_float")
    assert (scalar.kind, scalar.formula) == ("scalar", "s")
    assert out.proof.declared == 5


def test_op_outside_the_vocabulary_is_listed_not_guessed():
    out = trace_model(lambda: Toy("opaque"), lambda m: m.process_weights_after_loading(), "toy")
    assert out.proof.ok
    assert sorted(u.path for u in out.draft.unexpressed) == ["kernel.cum", "kernel.rows.0"]
    assert out.draft.opaque_ops == ["aten.cumsum.default"]
    assert "aten.cumsum.default" in out.yaml and "kernel.cum" in out.yaml


def test_host_copy_read_through_tolist_is_drafted_from_its_source():
    """``torch.tensor(s.tolist())`` carries no op; the value equals the one-element source
    ``s``, so the draft copies it (``clone(s)``), and perturbing ``s`` A->B proves it."""
    out = trace_model(lambda: Toy("tolist"), lambda m: m.process_weights_after_loading(), "toy")
    assert out.proof.ok, out.proof.summary()
    host = _by_name(out, "host", "kernel")
    assert (host.kind, host.formula) == ("attribute", "clone(s)")
    assert [u.path for u in out.draft.unexpressed] == ["kernel.rows.0"]


def test_value_the_recording_cannot_see_is_dropped_by_the_oracle():
    """Canary: ``s.tolist() * 2`` hides the dependency and matches no source; the first draft
    declares a constant, the oracle rejects it (cold starts of A and B differ), and it is
    dropped and listed instead of written."""
    out = trace_model(lambda: Toy("tolist-doubled"), lambda m: m.process_weights_after_loading(),
                      "toy")
    assert out.proof.ok
    reasons = {u.path: u.reason for u in out.draft.unexpressed}
    assert sorted(reasons) == ["kernel.host", "kernel.rows.0"]
    assert "recording cannot see" in reasons["kernel.host"]
    assert "host" not in {e.name for s in out.draft.specs for e in s.entries}


def _fill_toy_outcome():
    return trace_model(lambda: Toy("fill"), lambda m: m.process_weights_after_loading(), "toy")


def test_in_place_host_copy_is_a_copy_of_its_scale():
    out = _fill_toy_outcome()
    assert out.proof.ok, out.proof.summary()
    entry = _by_name(out, "host_cpu")
    assert (entry.kind, entry.formula) == ("attribute", "clone(s)")


def test_a_wrong_constant_for_an_in_place_host_copy_is_rejected():
    """Canary: the engine refills ``host_cpu`` in place on every reload, so a refill keeps its
    fresh value whatever the draft says. The old oracle passed the constant draft; now every
    source is perturbed A->B, a constant whose cold starts differ is rejected, and the
    recompute stage (formulas alone, constants rewritten) shows it wrong."""
    from derivgraph import load_spec_text
    from derivgraph.trace.proof import VARYING_CONSTANT, prove

    out = _fill_toy_outcome()
    value = float(Toy("fill").s)
    wrong = out.yaml.replace('"clone(s)"', f'"full([], {value!r}, dtype=float32)"')
    assert wrong != out.yaml
    reload = CheckpointReload(lambda: Toy("fill"), lambda m: m.process_weights_after_loading())
    proof = prove(load_spec_text(wrong), reload.make, reload.reload)
    assert not proof.ok
    assert proof.rejected == {"host_cpu": VARYING_CONSTANT}
    recompute = {s["stage"]: s["mismatched"] for s in proof.stages}
    assert recompute["A->B recompute"] == ["host_cpu"]
    assert recompute["A->B refill"] == []  # the refill alone cannot see it: the engine's value
    right = prove(load_spec_text(out.yaml), reload.make, reload.reload)
    assert right.ok and not right.rejected and not right.unperturbed


def test_perturb_changes_every_element():
    """Weights B differ from A everywhere: zeros, narrow float dtypes, integers."""
    from derivgraph.trace.proof import perturb

    gen = torch.Generator().manual_seed(1)
    for t in (torch.zeros(64), torch.linspace(-2, 2, 64).to(torch.float8_e4m3fn),
              torch.randn(64).to(torch.bfloat16), torch.arange(64, dtype=torch.int8),
              torch.tensor(1.0)):
        p = perturb(t, gen)
        assert p.dtype == t.dtype and p.shape == t.shape
        assert bool((p.float() != t.float()).all()), t.dtype


class ToyMLA(nn.Module):
    """vLLM's MLA absorption in miniature: a block-scaled kv_b_proj weight dequantized (block
    scales repeated with unsqueeze/expand/reshape, as vLLM's scaled_dequantize does), then
    ``W_UV`` / ``W_UK_T`` as Parameters over views of a ``split``."""

    L, N, P, V = 8, 2, 4, 4

    def __init__(self):
        super().__init__()
        self.qk_nope_head_dim = self.P  # int config attributes name the slice bounds
        g = torch.Generator().manual_seed(11)
        rows = self.N * (self.P + self.V)
        self.weight = nn.Parameter(torch.randn(rows, self.L, generator=g), requires_grad=False)
        self.scale_inv = nn.Parameter(torch.rand(2, 2, generator=g) + 0.5, requires_grad=False)

    def process_weights_after_loading(self) -> None:
        s = self.scale_inv
        s = s.unsqueeze(1).expand(2, 8, 2).reshape(16, 2)      # repeat rows over blocks of 8
        s = s.unsqueeze(2).expand(16, 2, 4).reshape(16, 8)     # repeat cols over blocks of 4
        w = (self.weight * s).to(torch.bfloat16).T.view(self.L, self.N, self.P + self.V)
        uk, uv = w.split([self.P, self.V], dim=-1)
        self.W_UV = nn.Parameter(uv.transpose(0, 1), requires_grad=False)
        self.W_UK_T = nn.Parameter(uk.permute(1, 2, 0), requires_grad=False)


def test_block_dequantized_split_views_become_parameters_with_formulas():
    out = trace_model(ToyMLA, lambda m: m.process_weights_after_loading(), "toy-mla")
    assert out.proof.ok, out.proof.summary() + out.yaml
    w = ("reshape(permute(cast(weight * group_broadcast(scale_inv, [16, 8]), bfloat16), "
         "[1, 0]), [8, 2, 8])")
    uv, uk = _by_name(out, "W_UV"), _by_name(out, "W_UK_T")
    p = "qk_nope_head_dim"
    assert (uv.kind, uv.formula) == ("parameter", f"transpose({w}[:, :, {p}:], 0, 1)")
    assert (uk.kind, uk.formula) == ("parameter", f"permute({w}[:, :, :{p}], [1, 2, 0])")
    assert not out.draft.unexpressed and out.proof.changed == 2


# ---- command line ----------------------------------------------------------------------------

def test_cli_writes_a_proven_valid_spec(tmp_path: Path, capsys):
    target = tmp_path / "traced.yaml"
    assert main(["trace", "-o", str(target)]) == 0
    text = capsys.readouterr().out
    assert "proof ok: 27 declared" in text and f"wrote {target}" in text
    specs = load_spec_file(target)
    assert sorted(s.name for s in specs) == ["traced-ref-attention", "traced-ref-drafter",
                                             "traced-ref-mo-e"]


def test_cli_package_without_builders_says_so(monkeypatch, capsys):
    import sys

    monkeypatch.setitem(sys.modules, "vllm_integration.builders", None)
    assert main(["trace", "--package", "vllm"]) == 2
    assert "needs vllm_integration.builders" in capsys.readouterr().err  # errors on stderr


# ---- real vLLM 0.33.0 classes ----------------------------------------------------------------

@pytest.fixture(scope="module")
def vllm_cases():
    pytest.importorskip("vllm")
    from tests.fixtures.trace_cases import cpu_patches, vllm_cases

    with cpu_patches():
        yield {c.name: c for c in vllm_cases()}


def _trace_and_compare(cases, name):
    from tests.fixtures.trace_cases import cpu_patches

    with cpu_patches():
        case = cases[name]
        outcome = case.trace()
        assert outcome.proof.ok, outcome.proof.summary() + outcome.yaml
        return outcome, case.compare(outcome.specs)


@pytest.mark.vllm
@pytest.mark.parametrize("name", ["moe:fp8-flashinfer-cutlass-per-tensor",
                                  "moe:nvfp4-flashinfer-cutlass-swiglu", "moe:fp8-cutlass",
                                  "drafter:qwen3-dflash"])
def test_vllm_trace_equals_hand_written(vllm_cases, name):
    outcome, result = _trace_and_compare(vllm_cases, name)
    assert result and all(c.equivalent for c in result), [c.describe() for c in result]
    if name == "moe:fp8-flashinfer-cutlass-per-tensor":
        assert _by_name(outcome, "g1_alphas").kind == "parameter"  # registered by vLLM
        assert _by_name(outcome, "alpha_or_gscale", "quant_method.moe_quant_config._w1").of \
            == "g1_alphas"
    if name == "moe:fp8-cutlass":  # the strides object, reached the way vLLM's code reads it
        fe = "quant_method.moe_kernel.fused_experts"
        assert _by_name(outcome, "c_strides2", fe).of == "ab_strides1"
        assert _by_name(outcome, "ab_strides1", fe).formula.startswith("full([")
    if name == "drafter:qwen3-dflash":
        assert "each('layers.*.self_attn.qkv_proj.weight')" in _by_name(
            outcome, "_fused_kv_weight").formula


@pytest.mark.vllm
def test_vllm_kimi_scalars_host_copies_and_absorbed_weights(vllm_cases):
    outcome, result = _trace_and_compare(vllm_cases, "kimi-k3-mla")
    for name in ("_q_scale_float", "_k_scale_float", "_v_scale_float"):
        assert _by_name(outcome, name).kind == "scalar"
    # host copies filled in place from k_scale.tolist(): a copy of the scale, not a constant
    for name, src in (("_k_scale_cpu", "_k_scale"), ("_v_scale_cpu", "_v_scale")):
        entry = _by_name(outcome, name)
        assert (entry.kind, entry.formula) == ("attribute", f"clone({src})")
    # W_UK_T / W_UV: Parameters over views of kv_b_proj.weight (split, view, permute)
    uv, uk = _by_name(outcome, "W_UV"), _by_name(outcome, "W_UK_T")
    assert (uv.kind, uk.kind) == ("parameter", "parameter")
    assert uv.formula == ("transpose(reshape(permute(kv_b_proj.weight, [1, 0]), [16, 2, 16])"
                          "[:, :, qk_nope_head_dim:], 0, 1)")
    assert uk.formula == ("permute(reshape(permute(kv_b_proj.weight, [1, 0]), [16, 2, 16])"
                          "[:, :, :qk_nope_head_dim], [1, 2, 0])")
    (cmp,) = result
    assert not cmp.missing and not cmp.kind_mismatch and not cmp.value_mismatch, cmp.describe()
    assert cmp.extra == ["attn._k_scale_cpu", "attn._prob_scale_float", "attn._v_scale_cpu"]
    # _prob_scale is never loaded by this builder: its float is kept but noted as unproven
    assert sorted(outcome.proof.unproven) == ["attn._prob_scale_float"]
    assert "unproven: attn._prob_scale_float" in outcome.yaml


@pytest.mark.vllm
@pytest.mark.parametrize("kind", ["bf16", "fp8-block"])
def test_vllm_mla_absorbed_weights(vllm_cases, kind):
    """vLLM's MLAAttention: W_UV / W_UK_T from kv_b_proj, dequantized for FP8 block scales
    (the 128x128 expansion is written as group_broadcast), equal to the hand-written specs."""
    outcome, result = _trace_and_compare(vllm_cases, f"mla:{kind}")
    weight = "kv_b_proj.weight"
    if kind == "fp8-block":
        weight = ("cast(cast(kv_b_proj.weight, float32) * group_broadcast("
                  "kv_b_proj.weight_scale_inv, [256, 256]), bfloat16)")
    split = f"reshape(permute({weight}, [1, 0]), [256, 2, 128])"
    uv, uk = _by_name(outcome, "W_UV"), _by_name(outcome, "W_UK_T")
    assert (uv.kind, uv.formula) == ("parameter",
                                     f"transpose({split}[:, :, qk_nope_head_dim:], 0, 1)")
    assert (uk.kind, uk.formula) == ("parameter",
                                     f"permute({split}[:, :, :qk_nope_head_dim], [1, 2, 0])")
    (cmp,) = result
    assert {"attn.W_UV", "attn.W_UK_T"} <= set(cmp.hand)
    assert not cmp.missing and not cmp.kind_mismatch and not cmp.value_mismatch, cmp.describe()


def test_cli_package_drafts_every_runnable_case(monkeypatch, tmp_path: Path, capsys):
    """--package vllm against the builders contract (a stand-in module with the same API)."""
    import sys
    import types
    from dataclasses import dataclass as dc

    from derivgraph.tools.reference_models import RefConfig, build_reference_model, make_weights

    class NotRunnable(Exception):
        pass

    @dc(frozen=True)
    class Case:
        name: str
        classes: tuple[str, ...]
        runnable: bool = True

        def build(self, seed: int) -> nn.Module:
            if not self.runnable:
                raise NotRunnable("needs a CUDA op")
            return build_reference_model(make_weights(RefConfig(), seed))

        def reload(self, model: nn.Module, seed: int) -> None:
            model.load_weights(make_weights(RefConfig(), seed))
            model.process_weights_after_loading()

    fake = types.ModuleType("vllm_integration.builders")
    fake.NotRunnable = NotRunnable
    fake.cases = lambda: [Case("reference", ("RefMoE",)), Case("cuda-only", ("X",), False)]
    monkeypatch.setitem(sys.modules, "vllm_integration.builders", fake)
    assert main(["trace", "--package", "vllm", "-o", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "cuda-only: not runnable on this machine: needs a CUDA op" in out
    assert "1/1 runnable case(s) drafted and proven; 1 not runnable" in out
    specs = load_spec_file(tmp_path / "reference.yaml")
    assert {s.target.module_class[0] for s in specs} == {"RefMoE", "RefAttention", "RefDrafter"}
