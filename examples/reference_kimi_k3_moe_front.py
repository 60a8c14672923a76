"""Reference Kimi-K3 specialized decode: the packed MoE front, like vLLM 0.33.0.

Mirrors vLLM's owners and names: ``KimiLinearForCausalLM.model.layers[i]`` is a
``KimiDecoderLayer`` whose ``block_sparse_moe`` (also ``mlp``) is a ``KimiMoE`` with
``gate.weight`` ``[896, 7168]`` and ``routed_expert_down_proj.weight`` ``[3584, 7168]`` (bf16; the
sizes ``pack_front`` hardcodes). ``build_specialized_decode`` (run once, after the first load,
like vLLM's model state) builds ``SpecializedDecode`` whose ``build_providers`` packs each MoE
layer's front with ``pack_front(moe, rank, tp)`` and hands the tensor to the holders vLLM hands
it to: ``prefetch.tables[(point, layer, batch)]`` (``PreparedWeightRanges``: a ``weights``
tuple and a ``data_ptr`` range table) and ``feed_forward[layer].front.packed`` (a
``SharedFront`` whose ``packed`` is, as in vLLM, an address-only view, here
:class:`CuteView`). Layer 0 is dense: its ``feed_forward[0]`` is the dense
reference's ``PreparedDenseMLP`` (a padded down-projection copy at TP16 only, like vLLM's), so
the whole spec library applies as it would to vLLM's model. ``pack`` is the ``pack_front`` to
call: this module's copy of vLLM's code, vLLM's own, or either wrapped by derivgraph's hook
(``vllm_integration.kimi_k3_front``), which keeps the tensor on the MoE module for
``vllm-kimi-k3-packed-moe-front`` (``specs/vllm_kimi_k3_kda.yaml``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import torch
from torch import nn

from derivgraph.examples.reference_kimi_k3_dense import PreparedDenseMLP
from derivgraph.tools.loading import load_in_place  # noqa: F401  (re-exported for the tests)

__all__ = ["CuteView", "KimiLinearForCausalLM", "build_kimi_k3_moe_front", "load_in_place",
           "make_kimi_k3_moe_front_weights", "pack_front"]

ROUTER_ROWS, LATENT, HIDDEN = 896, 3584, 7168  # what vLLM's pack_front hardcodes
MOE_LAYERS = (1, 2)  # layer 0 is dense, like Kimi-K3's first layer
DENSE_HIDDEN = 16  # the dense layer at toy width: only its local intermediate size matters


def dense_intermediate(tp: int) -> int:
    """The dense MLP's local intermediate size: a multiple of 128 at TP8, not at TP16 (padded
    there, like vLLM's 4224 / 2112)."""
    return 3072 // tp

PackFront = Callable[[nn.Module, int, int], torch.Tensor]


def pack_front(moe: nn.Module, rank: int, tp: int) -> torch.Tensor:
    """vLLM 0.33.0's ``runtime/providers.py::pack_front``, line for line."""
    router, down = moe.gate.weight, moe.routed_expert_down_proj.weight
    rows, shard = 896 // tp, 3584 // tp
    router = router[rank * rows : (rank + 1) * rows]
    down = down[rank * shard : (rank + 1) * shard]
    return torch.cat((router, router.new_zeros((-rows % 16, 7168)), down)).detach()


@dataclass(frozen=True)
class CuteView:
    """What ``to_cute(packed)`` keeps: an address and a shape, no torch tensor."""

    address: int
    shape: tuple[int, ...]


class PreparedWeightRanges:
    """Like vLLM's: the weights tuple and the (data_ptr, bytes) table the prefetch reads."""

    def __init__(self, weights: tuple[torch.Tensor, ...]) -> None:
        self.weights = weights = tuple(weights)
        ranges = [(w.data_ptr(), w.numel() * w.element_size()) for w in weights]
        self.table = torch.tensor(ranges, dtype=torch.int64)


class PrefetchController:
    """Per (point, layer, batch) range tables, like vLLM's (TP8 also at ``attention_moe``)."""

    def __init__(self, tp: int, packed: dict[int, torch.Tensor]) -> None:
        self.tables: dict[tuple[str, int, int], PreparedWeightRanges] = {}
        for index, front in packed.items():
            ranges = PreparedWeightRanges((front,))
            for batch in range(3, 9):
                self.tables["oproj_down", index, batch] = ranges
            if tp == 8:
                ranges = PreparedWeightRanges((front,))
                for batch in range(5, 9):
                    self.tables["attention_moe", index, batch] = ranges


class SharedFront:
    """The front GEMM: reads the packed rows through an address-only view."""

    def __init__(self, packed: torch.Tensor) -> None:
        self.packed = CuteView(packed.data_ptr(), tuple(packed.shape))


class PreparedMoE:
    def __init__(self, front: SharedFront) -> None:
        self.front = front


class SpecializedDecode:
    """Built once after the first load; reads the backbone, never rebuilt on a reload."""

    def __init__(self, backbone: nn.Module, tp: int, rank: int, pack: PackFront) -> None:
        self.backbone, self.tp, self.rank = backbone, tp, rank
        self.layers = tuple(backbone.layers)
        self.build_providers(pack)

    def build_providers(self, pack: PackFront) -> None:
        tp, rank = self.tp, self.rank
        packed = {d.layer_idx: pack(d.mlp, rank, tp) for d in self.layers if d.is_moe_layer}
        self.prefetch = PrefetchController(tp, packed)
        self.feed_forward: dict[int, PreparedMoE | PreparedDenseMLP] = {
            d.layer_idx: PreparedDenseMLP(d.mlp) for d in self.layers if not d.is_moe_layer}
        self.feed_forward.update({i: PreparedMoE(SharedFront(p)) for i, p in packed.items()})


class _Linear(nn.Module):
    def __init__(self, rows: int, cols: int) -> None:
        super().__init__()
        self.weight = nn.Parameter(torch.empty(rows, cols, dtype=torch.bfloat16),
                                   requires_grad=False)


class KimiMoE(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.gate = _Linear(ROUTER_ROWS, HIDDEN)  # GateLinear in vLLM
        self.routed_expert_down_proj = _Linear(LATENT, HIDDEN)  # ReplicatedLinear in vLLM


class KimiMLP(nn.Module):
    def __init__(self, intermediate: int) -> None:
        super().__init__()
        self.gate_up_proj = _Linear(2 * intermediate, DENSE_HIDDEN)
        self.down_proj = _Linear(DENSE_HIDDEN, intermediate)


class KimiDecoderLayer(nn.Module):
    def __init__(self, layer_idx: int, tp: int) -> None:
        super().__init__()
        self.layer_idx, self.is_moe_layer = layer_idx, layer_idx in MOE_LAYERS
        if self.is_moe_layer:
            self.block_sparse_moe = KimiMoE()
            self.mlp = self.block_sparse_moe
        else:
            self.mlp = KimiMLP(dense_intermediate(tp))


class KimiLinearModel(nn.Module):
    def __init__(self, tp: int) -> None:
        super().__init__()
        self.layers = nn.ModuleList([KimiDecoderLayer(i, tp)
                                     for i in range(1 + len(MOE_LAYERS))])


class KimiLinearForCausalLM(nn.Module):
    def __init__(self, tp: int) -> None:
        super().__init__()
        self.model = KimiLinearModel(tp)
        self.specialized_decode: SpecializedDecode | None = None

    def build_specialized_decode(self, tp: int, rank: int, pack: PackFront = pack_front) -> None:
        self.specialized_decode = SpecializedDecode(self.model, tp, rank, pack)


def make_kimi_k3_moe_front_weights(seed: int, tp: int = 8) -> dict[str, torch.Tensor]:
    """Every weight by its runtime name (the dense layer's too: a reload loads all of them)."""
    g = torch.Generator().manual_seed(seed)
    inter = dense_intermediate(tp)
    out = {"model.layers.0.mlp.gate_up_proj.weight":
           torch.randn(2 * inter, DENSE_HIDDEN, generator=g).bfloat16(),
           "model.layers.0.mlp.down_proj.weight":
           torch.randn(DENSE_HIDDEN, inter, generator=g).bfloat16()}
    for i in MOE_LAYERS:
        base = f"model.layers.{i}.block_sparse_moe"
        out[f"{base}.gate.weight"] = torch.randn(ROUTER_ROWS, HIDDEN, generator=g).bfloat16()
        out[f"{base}.routed_expert_down_proj.weight"] = torch.randn(
            LATENT, HIDDEN, generator=g).bfloat16()
    return out



def build_kimi_k3_moe_front(weights: dict[str, torch.Tensor], tp: int = 8, rank: int = 0,
                            pack: PackFront = pack_front) -> KimiLinearForCausalLM:
    """A cold start: load, then build the specialized decode once (before graph capture)."""
    model = KimiLinearForCausalLM(tp)
    load_in_place(model, weights)
    model.build_specialized_decode(tp, rank, pack)
    return model
