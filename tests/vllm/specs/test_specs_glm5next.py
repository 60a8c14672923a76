"""GLM-5-next's built-in specs, proven against vLLM 0.33.0's own code on CPU: vLLM's own first
forward builds ``_wp_fp32`` and ``_merged_conv_weight`` (bare instances, run until the first
GPU kernel)."""

from __future__ import annotations

from typing import Any

import pytest
import torch
from torch import nn

pytestmark = pytest.mark.vllm

pytest.importorskip("vllm")

from derivgraph import compile_plan  # noqa: E402
from derivgraph.paths import get_path  # noqa: E402
from derivgraph.spec.load import builtin_specs  # noqa: E402

SPECS = builtin_specs()



# ---- GLM-5-next: vLLM's own first forward builds _wp_fp32 / _merged_conv_weight ----------------

class _StopAfterCache(Exception):
    """Raised by the first kernel after the cached tensor is built (the kernels need a GPU)."""


class _Proj(nn.Module):
    """A ReplicatedLinear stand-in: ``(x @ weight.T, None)``."""

    def __init__(self, weight: torch.Tensor) -> None:
        super().__init__()
        self.weight = nn.Parameter(weight.clone(), requires_grad=False)

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, None]:
        return torch.nn.functional.linear(x, self.weight), None


class _Conv(nn.Module):
    """A conv1d ColumnParallelLinear stand-in whose ``bias``, read right after the merged weight
    is cached, stops vLLM's ``_forward`` before the causal-conv kernel."""

    def __init__(self, weight: torch.Tensor) -> None:
        super().__init__()
        self.weight = nn.Parameter(weight.clone(), requires_grad=False)

    @property
    def bias(self) -> None:
        raise _StopAfterCache


def _vllm_glm5next_root(weights: dict[str, torch.Tensor], mp: pytest.MonkeyPatch) -> nn.Module:
    """vLLM's Indexer and Glm5NextLinearAttention (bare instances), run through their own
    forward until the cache is built."""
    import types

    from vllm.models.glm5next.common import attention as attn_mod
    from vllm.models.glm5next.common import kda as kda_mod

    from derivgraph.examples.reference_glm5next import HEAD_DIM, HIDDEN, N_HEAD, C, P

    def stop(*args: Any, **kwargs: Any) -> None:
        raise _StopAfterCache

    indexer = attn_mod.Indexer.__new__(attn_mod.Indexer)
    nn.Module.__init__(indexer)
    indexer.head_dim, indexer.n_head, indexer._wp_fp32 = HEAD_DIM, N_HEAD, None
    indexer.wq_b = _Proj(torch.zeros(HEAD_DIM * N_HEAD, 4, dtype=torch.bfloat16))
    indexer.wk_weights_proj = _Proj(weights["indexer.wk_weights_proj.weight"])
    indexer.k_norm = nn.LayerNorm(HEAD_DIM)
    mp.setattr(attn_mod, "_fused_indexer_k_norm", stop)
    with pytest.raises(_StopAfterCache):
        indexer.forward(torch.zeros(2, HIDDEN, dtype=torch.bfloat16),
                        torch.zeros(2, 4, dtype=torch.bfloat16), None, None)

    kda = kda_mod.Glm5NextLinearAttention.__new__(kda_mod.Glm5NextLinearAttention)
    nn.Module.__init__(kda)
    kda.local_projection_size, kda.conv_size, kda.prefix = P, C, "linear_attn"
    kda.q_conv1d, kda.k_conv1d, kda.v_conv1d = (
        _Conv(weights[f"linear_attn.{n}_conv1d.weight"]) for n in "qkv")
    kda._merged_conv_weight, kda._conv_state_dim_first = None, True
    kda.kda_safe_gate, kda.kda_lower_bound = True, -5.0
    kda.kv_cache = (torch.zeros(1, 3 * P, C - 1), torch.zeros(1))
    meta = types.SimpleNamespace(
        has_initial_state=None, non_spec_query_start_loc=None,
        non_spec_state_indices_tensor=None, num_actual_tokens=1, spec_sequence_masks=None,
        spec_query_start_loc=None, spec_state_indices_tensor=None, spec_token_indx=None,
        non_spec_token_indx=None, num_accepted_tokens=None, num_spec_decodes=0)
    mp.setattr(kda_mod, "GDNAttentionMetadata", types.SimpleNamespace)
    mp.setattr(kda_mod, "get_forward_context",
               lambda: types.SimpleNamespace(attn_metadata={"linear_attn": meta}))
    with pytest.raises(_StopAfterCache):
        kda._forward(torch.zeros(1, 3 * P), torch.zeros(1, 1, 1, 1), torch.zeros(1, 1, 1),
                     torch.zeros(1))

    root = nn.Module()
    root.indexer, root.linear_attn = indexer, kda
    return root


def test_glm5next_caches_match_vllm_first_forward() -> None:
    from derivgraph.examples.reference_glm5next import load_in_place, make_glm5next_weights

    keys = ["indexer._wp_fp32", "linear_attn._merged_conv_weight"]
    with pytest.MonkeyPatch.context() as mp:
        model = _vllm_glm5next_root(make_glm5next_weights(1), mp)
        plan = compile_plan(model, SPECS)
        assert sorted(plan.entries) == keys
        assert all(plan.entries[k].adopted for k in keys)  # vLLM's values, bit for bit
        startup = {k: get_path(model, k) for k in keys}
        for seed in (2, 1):
            load_in_place(model, make_glm5next_weights(seed))
            assert plan.run(verify=True).moved == []
            cold = _vllm_glm5next_root(make_glm5next_weights(seed), mp)
            for k in keys:
                assert get_path(model, k) is startup[k], k
                assert torch.equal(get_path(model, k), get_path(cold, k)), (k, seed)
