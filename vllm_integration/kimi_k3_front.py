"""Kimi-K3 specialized decode: give the packed MoE front an owner path a spec can name.

vLLM 0.33.0's ``SpecializedDecode.build_providers`` (``models/kimi_k3/nvidia/specialized_decode/
runtime/decode.py``) calls ``pack_front(moe, rank, tp)`` (``runtime/providers.py``) once per MoE
layer, after the first load, and keeps the packed copy ``[this rank's router rows, zero-padded
to a multiple of 16; this rank's latent down shard]`` only in a local dict, then inside
``PreparedWeightRanges.weights`` tuples of ``prefetch.tables[(point, layer, batch)]`` (whose
``data_ptr`` range table the prefetch kernel reads) and as a CuTe view in ``SharedFront.packed``.
None of those is a path a spec can name, and all of them bake the copy's address.

The hook wraps ``pack_front`` (hook table rows ``providers.pack_front`` and its by-name binding
in ``runtime.decode``) and, after vLLM's function returns, keeps a reference to the *same*
tensor on the MoE module at :data:`PACKED_FRONT` with the call's ``rank`` and ``tp`` at
:data:`PACKED_FRONT_RANK` / :data:`PACKED_FRONT_TP`. It returns vLLM's object unchanged, so
every holder shares it; the spec ``vllm-kimi-k3-packed-moe-front``
(``specs/vllm_kimi_k3_kda.yaml``) adopts it as an ``attribute`` and the pass refills it in
place (its address, baked into the kernels and the range table, never changes).

The plugin compiles a model's plan after vLLM's post-load step, but ``KimiK3ModelState`` builds
the specialized decode later (``build_specialized_decode``), so a second row wraps
``KimiLinearForCausalLM.build_specialized_decode``: once it returns, the plan of the model that
holds this language model is recompiled (:func:`session.replan`: the tensors it already bound are
adopted, nothing moves), which binds the packed fronts and the TP16 padded dense down
projection (``vllm-kimi-k3-specialized-dense-down-tp16``) too.

Plain attributes, not buffers: ``named_buffers`` and ``state_dict`` stay as vLLM made them, so
no loader, layerwise copy-back or sleep-mode pool sees a new tensor. Nothing here imports vLLM
(or torch, until a wrapper runs).
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from vllm_integration.config import current_mode

if TYPE_CHECKING:  # the plugin registers without importing torch
    import torch

__all__ = ["PACKED_FRONT", "PACKED_FRONT_RANK", "PACKED_FRONT_TP", "keep_packed_front",
           "replan_owners", "wrap_build_specialized_decode", "wrap_pack_front"]

logger = logging.getLogger(__name__)

#: The MoE module attribute holding vLLM's packed front tensor (the same object).
PACKED_FRONT = "derivgraph_packed_front"
#: The tensor-parallel rank ``pack_front`` was called with (an ``int``).
PACKED_FRONT_RANK = "derivgraph_packed_front_rank"
#: The tensor-parallel world size ``pack_front`` was called with (an ``int``).
PACKED_FRONT_TP = "derivgraph_packed_front_tp"


def keep_packed_front(moe: Any, packed: torch.Tensor, rank: int, tp: int) -> None:
    """Keep ``packed`` (not a copy) and the call's ``rank`` / ``tp`` on the MoE module."""
    import torch

    if not isinstance(packed, torch.Tensor):
        logger.warning("derivgraph: pack_front returned %s, not a tensor; the packed MoE front "
                       "is not declared", type(packed).__name__)
        return
    setattr(moe, PACKED_FRONT, packed)
    setattr(moe, PACKED_FRONT_RANK, int(rank))
    setattr(moe, PACKED_FRONT_TP, int(tp))


def _active() -> bool:
    return current_mode() != "off"


def wrap_pack_front(orig: Callable[..., torch.Tensor]) -> Callable[..., torch.Tensor]:
    """The hook's wrapper: vLLM's ``pack_front``, then :func:`keep_packed_front` (same object)."""

    @functools.wraps(orig)
    def pack_front(moe: Any, rank: int, tp: int) -> torch.Tensor:
        packed = orig(moe, rank, tp)
        if _active():
            keep_packed_front(moe, packed, rank, tp)
        return packed

    return pack_front


def replan_owners(language_model: Any) -> int:
    """Recompile the plan of every planned model that is or holds ``language_model``.

    Returns how many plans were recompiled. A spec problem raises in ``strict`` mode; otherwise
    it is logged and the plan compiled at load stays in place.
    """
    from derivgraph.errors import DerivgraphError  # lazy: derivgraph at plugin load
    from vllm_integration import session  # lazy: torch at plugin load

    count = 0
    for model in session.planned_models():
        if model is not language_model and not any(m is language_model for m in model.modules()):
            continue
        try:
            plan = session.replan(model)
        except DerivgraphError as exc:
            if current_mode() == "strict":
                raise
            logger.error("derivgraph: the specialized decode's derived tensors of %s are not "
                         "kept across reloads (the plan compiled at load stays):\n%s",
                         type(model).__name__, exc)
            continue
        count += 1
        logger.info("derivgraph: %s plan recompiled after the specialized decode was built: %d "
                    "derived tensors", type(model).__name__, len(plan))
    return count


def wrap_build_specialized_decode(orig: Callable[..., Any]) -> Callable[..., Any]:
    """The hook's wrapper: vLLM's ``build_specialized_decode``, then :func:`replan_owners`."""

    @functools.wraps(orig)
    def build_specialized_decode(self: Any, *args: Any, **kwargs: Any) -> Any:
        result = orig(self, *args, **kwargs)
        if _active():
            replan_owners(self)
        return result

    return build_specialized_decode
