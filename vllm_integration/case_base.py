"""The machinery of the executable vLLM cases: a case, its layers and model, its reload.

:class:`VllmCase` builds ``LAYERS`` layers whose ``quant_method`` (or a real vLLM layer) runs
vLLM's own post-load code, records vLLM's reload metadata, loads a seeded checkpoint, and
reloads it through vLLM's real layerwise path (the recipe of
``shared/reference/vllm-0.33-on-cpu.md`` §1-2). The cases themselves are in
:mod:`vllm_integration.builders` and ``class_cases``; importing this module imports torch, and
vLLM only when a case runs.
"""

from __future__ import annotations

import contextlib
import importlib
import logging
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import torch
from torch import nn

from derivgraph.errors import DerivgraphError
from vllm_integration.blockers import Blocker, blocker_of

__all__ = ["LAYERS", "NVFP4", "CaseLayer", "CaseModel", "NotRunnable", "PostLoad", "VllmCase",
           "experts", "load_class", "moe_config", "nvfp4_qc", "random_tensor", "vllm_runtime"]

logger = logging.getLogger(__name__)

E, H, N, LAYERS = 4, 256, 128, 2


class NotRunnable(DerivgraphError, RuntimeError):
    """vLLM's code for this case cannot run here; ``reason`` says why (and ``blocker`` what
    was raised, when vLLM's code was tried)."""

    def __init__(self, reason: str, blocker: Blocker | None = None):
        super().__init__(reason)
        self.reason = reason
        self.blocker = blocker


PostLoad = Callable[[nn.Module, nn.Module], None]  # (quant method, layer)


@contextlib.contextmanager
def _cpu_accelerator(needed: bool) -> Iterator[None]:
    """TRTLLM experts ask ``torch.accelerator.current_device_index()`` (no driver on CPU)."""
    if not needed:
        yield
        return
    original = torch.accelerator.current_device_index
    torch.accelerator.current_device_index = lambda: "cpu"  # type: ignore[assignment]
    try:
        yield
    finally:
        torch.accelerator.current_device_index = original


def moe_config():  # noqa: ANN202 - vLLM's FusedMoEConfig
    from vllm.model_executor.layers.fused_moe.activation import MoEActivation
    from vllm.model_executor.layers.fused_moe.config import (
        FusedMoEConfig,
        FusedMoEParallelConfig,
        RoutingMethodType,
    )

    return FusedMoEConfig(
        num_experts=E, experts_per_token=2, hidden_dim=H, intermediate_size=N,
        num_local_experts=E, num_logical_experts=E, activation=MoEActivation.SILU, device="cpu",
        routing_method=RoutingMethodType.Renormalize,
        moe_parallel_config=FusedMoEParallelConfig.make_no_parallel(), in_dtype=torch.bfloat16)


def _method_class(shapes: dict[str, tuple[tuple[int, ...], torch.dtype]],
                  post_load: PostLoad) -> type:
    from vllm.model_executor.layers.quantization.base_config import QuantizeMethodBase
    from vllm.model_executor.model_loader.weight_utils import default_weight_loader
    from vllm.model_executor.utils import set_weight_attrs

    class CaseMethod(QuantizeMethodBase):
        def create_weights(self, layer: nn.Module, *args: object, **kwargs: object) -> None:
            for name, (shape, dtype) in shapes.items():
                p = nn.Parameter(torch.empty(shape, dtype=dtype), requires_grad=False)
                set_weight_attrs(p, {"weight_loader": default_weight_loader})
                layer.register_parameter(name, p)

        def apply(self, layer: nn.Module, x: torch.Tensor, *args: object,
                  **kwargs: object) -> torch.Tensor:
            return x

        def process_weights_after_loading(self, layer: nn.Module) -> None:
            post_load(self, layer)

    return CaseMethod


class CaseLayer(nn.Module):
    """One layer: its ``quant_method`` creates the parameters and runs the post-load step."""

    def __init__(self, method_class: type):
        super().__init__()
        self.quant_method = method_class()
        self.quant_method.create_weights(self)


LoadOne = Callable[[nn.Module, str, torch.Tensor], object]
"""A model's own loader of one checkpoint tensor: (layer, name relative to it, tensor)."""


class CaseModel(nn.Module):
    """``LAYERS`` layers; ``load_weights`` as vLLM models do (new params after initialize), or
    through ``load`` (the model's own per-layer loader) when one is given."""

    def __init__(self, make_layer: Callable[[], nn.Module], load: LoadOne | None = None):
        super().__init__()
        self.layers = nn.ModuleList(make_layer() for _ in range(LAYERS))
        self._load = load

    def load_weights(self, weights: dict[str, torch.Tensor]) -> set[str]:
        from vllm.model_executor.model_loader.weight_utils import default_weight_loader

        if self._load is not None:
            for name, w in weights.items():
                index, _, local = name.removeprefix("layers.").partition(".")
                self._load(self.layers[int(index)], local, w)
            return set(weights)

        params = dict(self.named_parameters())
        for name, w in weights.items():
            getattr(params[name], "weight_loader", default_weight_loader)(params[name], w)
        return set(weights)


def random_tensor(shape: tuple[int, ...], dtype: torch.dtype, name: str,
            gen: torch.Generator) -> torch.Tensor:
    if dtype.is_floating_point and dtype.itemsize == 1:  # fp8 weights
        return (torch.randn(shape, generator=gen) * 0.5).to(dtype)
    if not dtype.is_floating_point:
        return torch.randint(0, 127, shape, generator=gen, dtype=torch.int64).to(dtype)
    if "scale" in name:
        return (0.01 + torch.rand(shape, generator=gen)).to(dtype)
    return (torch.randn(shape, generator=gen) * 0.1).to(dtype)


@dataclass(frozen=True)
class VllmCase:
    """One buildable vLLM configuration (see the module docstring for the contract)."""

    name: str
    classes: tuple[str, ...]
    shapes: dict[str, tuple[tuple[int, ...], torch.dtype]] = field(
        default_factory=dict, repr=False, compare=False)
    post_load: PostLoad | None = field(default=None, repr=False, compare=False)
    not_runnable: Callable[[], str | None] | None = field(default=None, repr=False,
                                                          compare=False)
    needs_cpu_accelerator: bool = field(default=False, repr=False, compare=False)
    layer: Callable[[], nn.Module] | None = field(default=None, repr=False, compare=False)
    first_forward: Callable[[nn.Module], None] | None = field(default=None, repr=False,
                                                               compare=False)
    patch: Callable[[], contextlib.AbstractContextManager] | None = field(
        default=None, repr=False, compare=False)
    once: bool = field(default=False, repr=False, compare=False)  # first_forward at build only
    #: the vLLM function where ``first_forward`` may stop (a GPU-only step after the code
    #: under audit, e.g. a kernel's CUDA workspace); any other failure is a blocker
    forward_stop: str | None = field(default=None, repr=False, compare=False)
    #: what stopped the last ``first_forward`` at ``forward_stop`` (``"forward"``)
    stops: dict[str, Blocker] = field(default_factory=dict, repr=False, compare=False)
    #: the model's own loader of one layer tensor, in place of the parameters' weight_loader
    load: LoadOne | None = field(default=None, repr=False, compare=False)

    @contextlib.contextmanager
    def _running(self) -> Iterator[None]:
        """The case's platform answers, and vLLM's failures as :class:`NotRunnable`."""
        try:
            with _cpu_accelerator(self.needs_cpu_accelerator), \
                    (self.patch() if self.patch else contextlib.nullcontext()):
                yield
        except NotRunnable:
            raise
        except Exception as exc:  # noqa: BLE001 - whatever vLLM's code raised is the blocker
            found = blocker_of(exc)
            raise NotRunnable(str(found), found) from exc

    def _layer(self) -> nn.Module:
        if self.layer is not None:
            return self.layer()
        assert self.post_load is not None
        return CaseLayer(_method_class(self.shapes, self.post_load))

    def layer_modules(self, model: nn.Module) -> list[nn.Module]:
        """The modules a post-load step was given (a layer-attribute store lands there)."""
        return [m for layer in model.layers for m in layer.modules()]

    def _after_load(self, model: nn.Module) -> None:
        if self.first_forward is not None:
            for layer in model.layers:
                self._forward(layer)

    def _forward(self, layer: nn.Module) -> None:
        """``first_forward`` on ``layer``; a failure inside ``forward_stop`` is recorded as
        where the forward stopped (after the code under audit ran), any other is raised."""
        try:
            self.first_forward(layer)  # type: ignore[misc]
        except Exception as exc:  # noqa: BLE001 - only the declared stop is accepted
            found = blocker_of(exc)
            if self.forward_stop is None or not (found.last_vllm_frame or "").endswith(
                    f" in {self.forward_stop}"):
                raise
            self.stops["forward"] = found

    def _check(self) -> None:
        reason = self.not_runnable() if self.not_runnable is not None else None
        if reason is not None:
            raise NotRunnable(reason, getattr(self.not_runnable, "blocker", None))
        if self.post_load is None and self.layer is None:
            raise NotRunnable("no post-load step defined")

    def weights(self, seed: int) -> dict[str, torch.Tensor]:
        """A seeded checkpoint (different seeds give different values everywhere)."""
        gen = torch.Generator().manual_seed(seed)
        return {f"layers.{i}.{name}": random_tensor(shape, dtype, name, gen)
                for i in range(LAYERS) for name, (shape, dtype) in self.shapes.items()}

    def build(self, seed: int) -> nn.Module:
        """A cold start: create_weights, record reload metadata, load ``seed``, post-load."""
        from vllm.model_executor.layers.quantization.base_config import QuantizeMethodBase
        from vllm.model_executor.model_loader.reload import record_metadata_for_reloading

        self._check()
        with self._running():
            model = CaseModel(self._layer, self.load)
            record_metadata_for_reloading(model)
            model.load_weights(self.weights(seed))
            for layer in model.layers:
                for module in layer.modules():  # as vLLM's loader: every quant method
                    method = getattr(module, "quant_method", None)
                    if isinstance(method, QuantizeMethodBase):
                        method.process_weights_after_loading(module)
            self._after_load(model)
        return model

    def reload(self, model: nn.Module, seed: int) -> None:
        """vLLM's real layerwise reload with the checkpoint of ``seed``."""
        from vllm.model_executor.model_loader.reload import (
            finalize_layerwise_reload,
            initialize_layerwise_reload,
        )

        with self._running():
            initialize_layerwise_reload(model)
            model.load_weights(self.weights(seed))
            finalize_layerwise_reload(model, None)
            if not self.once:
                self._after_load(model)



def experts(experts: str, quant_config: Callable[[nn.Module], object],
             experts_post_load: bool = False, **kwargs: object) -> PostLoad:
    def post_load(method: nn.Module, layer: nn.Module) -> None:
        qc = quant_config(layer)
        method.moe_quant_config = qc
        method.experts = load_class(experts)(moe_config(), qc, **kwargs)
        if experts_post_load:
            method.experts.process_weights_after_loading(layer)

    return post_load



def nvfp4_qc(backend: str) -> Callable[[nn.Module], object]:
    """make_nvfp4_moe_quant_config(``backend``) over a layer's NVFP4 scales (:data:`NVFP4`)."""
    def quant_config(layer: nn.Module):  # noqa: ANN202 - vLLM's FusedMoEQuantConfig
        from vllm.model_executor.layers.fused_moe.oracle import nvfp4

        return nvfp4.make_nvfp4_moe_quant_config(
            getattr(nvfp4.NvFp4MoeBackend, backend), layer.w13_weight_scale,
            layer.w2_weight_scale, layer.w13_weight_scale_2, layer.w2_weight_scale_2,
            layer.w13_input_scale, layer.w2_input_scale)

    return quant_config


NVFP4 = {"w13_weight_scale": ((E, 2 * N, H // 16), torch.float8_e4m3fn),
          "w2_weight_scale": ((E, H, N // 16), torch.float8_e4m3fn),
          "w13_weight_scale_2": ((E,), torch.float32), "w2_weight_scale_2": ((E,), torch.float32),
          "w13_input_scale": ((E,), torch.float32), "w2_input_scale": ((E,), torch.float32)}



def load_class(qualified: str) -> type:
    module, _, name = qualified.rpartition(".")
    return getattr(importlib.import_module(module), name)


@contextlib.contextmanager
def vllm_runtime(vllm_config: Any = None) -> Iterator[None]:
    """What vLLM's real quant methods ask for on construction: a current VllmConfig (with a
    model config naming the dtype, or ``vllm_config`` as given) and a one-process
    model-parallel group (gloo, CPU), torn down again on exit so that no process group
    outlives the probe."""
    import tempfile
    import types

    from vllm.config import DeviceConfig, VllmConfig, set_current_vllm_config
    from vllm.distributed import init_distributed_environment, initialize_model_parallel
    from vllm.distributed.parallel_state import (
        destroy_distributed_environment,
        destroy_model_parallel,
        model_parallel_is_initialized,
    )

    config = vllm_config or VllmConfig(device_config=DeviceConfig(device="cpu"))
    owned = not model_parallel_is_initialized()
    with tempfile.TemporaryDirectory(prefix="dg-vllm-") as tmp:
        try:
            if owned:
                with set_current_vllm_config(config):
                    init_distributed_environment(
                        world_size=1, rank=0, local_rank=0, backend="gloo",
                        distributed_init_method=f"file://{tmp}/init")
                    initialize_model_parallel(1, 1)
            if vllm_config is None:
                object.__setattr__(config, "model_config", types.SimpleNamespace(
                    dtype=torch.bfloat16, hf_config=None, is_encoder_decoder=False,
                    is_moe=False, quantization_config=None))
            with set_current_vllm_config(config):
                yield
        finally:
            if owned:
                destroy_model_parallel()
                destroy_distributed_environment()
