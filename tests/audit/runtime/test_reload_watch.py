"""The strict reload check's fast paths give the answers of the slow ones.

``reach`` (the light walk) must find the paths a census finds; batched and in-place digests
must equal one-tensor digests; the per-class walk plans are caches, so a structure change
between ``watch`` and ``check`` (a new attribute, an object swapped for another class, a
container re-shaped) must still be caught.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path

import torch
from torch import nn

from derivgraph.audit.runtime.census import reach, take_census
from derivgraph.audit.runtime.fingerprint import fingerprint, fingerprints
from derivgraph.audit.runtime.freshness import SAMPLE_BYTES, sampled_digest, sampled_digests
from derivgraph.audit.runtime.reload_watch import watch

sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "benchmarks"))
import bench_census  # noqa: E402 - the benchmark's vLLM-shaped model


def _model(layers: int = 3) -> nn.Module:
    torch.manual_seed(0)
    with torch.no_grad():
        return bench_census.Model(layers, 4, 32, 16, "cpu", torch.bfloat16)


def test_reach_finds_every_path_and_float_a_census_finds():
    model = _model()
    census = take_census(model, fingerprints=False)
    found = reach(model)
    assert {paths[0]: paths[1:] for _, paths in found.tensors} == {
        p: e.aliases for p, e in census.tensors().items()}
    assert all(t is census.entries[paths[0]].value for t, paths in found.tensors)
    assert found.floats == {p: e.value for p, e in census.scalars().items()}
    assert found.floats  # the attention impl's float scale is there
    assert any(len(paths) > 1 for _, paths in found.tensors)  # and aliases


def _odd_tensors() -> dict[str, torch.Tensor]:
    base = torch.randn(6, 8)
    return {
        "contiguous": base, "transposed": base.t(), "strided": base[:, ::2],
        "bf16": base.to(torch.bfloat16), "fp8": base.to(torch.float8_e4m3fn),
        "bool": base > 0, "int": torch.arange(7), "scalar": torch.tensor(1.5),
        "empty": torch.empty(0, 3), "conj": torch.randn(4, dtype=torch.complex64).conj(),
        "offset": base.reshape(-1)[5:], "big": torch.randn(1 << 19),
        "big_strided": torch.randn(1 << 18, 4)[:, 1], "meta": torch.empty(3, device="meta"),
        "param": nn.Parameter(torch.randn(3), requires_grad=True),
    }


def test_batched_and_in_place_digests_equal_one_tensor_digests():
    tensors = _odd_tensors()
    batched = fingerprints(tensors)
    for name, t in tensors.items():
        copy = t.detach().resolve_conj().contiguous().clone() if t.device.type != "meta" else t
        assert batched[name] == fingerprint(t) == fingerprint(copy), name
    assert batched["meta"] is None and batched["empty"] == "float32[0, 3]:"
    assert batched["conj"] != fingerprint(tensors["conj"].conj())  # values, not the raw bytes
    assert len(set(batched.values())) == len(batched)
    sampled = sampled_digests(tensors)
    assert sampled == {name: sampled_digest(t) for name, t in tensors.items()}
    for name in ("transposed", "strided", "big_strided", "big"):  # in place == copied path
        assert sampled[name] == sampled_digest(tensors[name].contiguous().clone()), name
    assert sampled["big"].startswith("~") and sampled["contiguous"] == batched["contiguous"]
    assert SAMPLE_BYTES < tensors["big"].numel() * 4


@dataclass
class _Holder:
    inv: torch.Tensor


class _Other:
    def __init__(self, inv: torch.Tensor) -> None:
        self.inv = inv
        self.extra = inv * 2


def test_structure_changes_between_watch_and_check_are_caught():
    model = _model(2)
    layer = model.layers[0].self_attn
    layer.holder = _Holder(torch.randn(4))
    record = watch(model)
    # a new attribute on an object of a class the plan cache already knows
    model.layers[1].mlp.quant_method.moe_kernel.fused_experts.fresh = torch.randn(3)
    # an object swapped for one of another class (same tensor, plus a new one)
    layer.holder = _Other(layer.holder.inv)
    # a list re-shaped into a dict: the same tensors at new paths
    experts = model.layers[0].mlp.quant_method.moe_kernel.fused_experts
    experts.workspaces = {"a": experts.workspaces[0], "b": experts.workspaces[1]}
    result = record.check(model)
    prefix = "layers.0.mlp.quant_method.moe_kernel.fused_experts.workspaces"
    assert f"{prefix}[0]" in result.moved and f"{prefix}[1]" in result.moved
    assert "layers.0.self_attn.holder.inv" not in result.moved  # the same tensor, same path
    assert result.undeclared == [
        "layers.0.self_attn.holder.extra",
        "layers.1.mlp.quant_method.moe_kernel.fused_experts.fresh"]
    again = watch(model).check(model)  # and a fresh record of the new structure is clean
    assert (again.moved, again.undeclared, again.unrefreshed) == ([], [], [])


def test_check_of_an_untouched_model_is_clean_and_a_swap_is_moved():
    model = _model(2)
    record = watch(model)
    clean = record.check(model)
    assert (clean.moved, clean.undeclared, clean.unrefreshed, clean.scalars) == ([], [], [], [])
    assert clean.tensors == len(record)
    impl = model.layers[1].self_attn.impl
    impl.W_UK_T = impl.W_UK_T.clone()  # same value, new storage
    assert record.check(model).moved == ["layers.1.self_attn.impl.W_UK_T"]
