"""vLLM 0.33.0 layers built at tiny shapes on CPU, with vLLM's own code: the executable cases.

Contract (used by ``derivgraph audit vllm`` and by the trace engine; keep it stable)::

    @dataclass(frozen=True)
    class VllmCase:
        name: str                     # e.g. "fp8-moe-cutlass"
        classes: tuple[str, ...]      # qualified names of the vLLM classes whose code runs
        def build(self, seed: int) -> torch.nn.Module   # create_weights, load(seed), post-load
        def reload(self, model: torch.nn.Module, seed: int) -> None  # vLLM's layerwise reload
    def cases() -> list[VllmCase]     # build() raises NotRunnable(reason) where CPU cannot run it

Every case is a model of ``LAYERS`` layers. Each layer's ``quant_method`` is a
``QuantizeMethodBase`` whose ``create_weights`` registers checkpoint parameters with
``weight_loader``s and whose ``process_weights_after_loading`` calls vLLM's real builders (quant
configs, experts constructors, ``make_fp8_moe_kernel``, experts' own post-load steps), the
recipe of ``shared/reference/vllm-0.33-on-cpu.md`` §1-2. ``build`` records vLLM's reload
metadata, loads a seeded checkpoint and runs the post-load step; ``reload`` is
``initialize_layerwise_reload`` -> ``load_weights`` -> ``finalize_layerwise_reload``.

vLLM's real quant methods (``Fp8LinearMethod``, ...) need a vLLM config, a GPU platform and
compiled ``_C`` ops for their post-load step: their cases try it and raise
:class:`NotRunnable` with what vLLM raised (:mod:`vllm_integration.blockers`). TRTLLM
experts need ``torch.accelerator.current_device_index`` to answer on CPU; their cases patch it
for the duration of the build/reload only. A case may also bring a real vLLM layer
(``layer``), answer other platform questions (``patch``) and run the forward-path call that
fills a lazy cache after each load (``first_forward``; with ``once``, only after the first load,
for objects vLLM builds once before graph capture); any failure of vLLM's code becomes
:class:`NotRunnable` with its :class:`~vllm_integration.blockers.Blocker`.

Importing this module imports vLLM (it is in ``vllm_integration``, never imported by
``derivgraph`` at load time).
"""

from __future__ import annotations

import contextlib
import importlib
import logging
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

import torch
from torch import nn

from derivgraph.errors import DerivgraphError
from vllm_integration.blockers import Blocker, attempt, blocker_of

__all__ = ["LAYERS", "NotRunnable", "VllmCase", "cases"]

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


def _moe_config():  # noqa: ANN202 - vLLM's FusedMoEConfig
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


class CaseModel(nn.Module):
    """``LAYERS`` layers; ``load_weights`` as vLLM models do (new params after initialize)."""

    def __init__(self, make_layer: Callable[[], nn.Module]):
        super().__init__()
        self.layers = nn.ModuleList(make_layer() for _ in range(LAYERS))

    def load_weights(self, weights: dict[str, torch.Tensor]) -> set[str]:
        from vllm.model_executor.model_loader.weight_utils import default_weight_loader

        params = dict(self.named_parameters())
        for name, w in weights.items():
            getattr(params[name], "weight_loader", default_weight_loader)(params[name], w)
        return set(weights)


def _random(shape: tuple[int, ...], dtype: torch.dtype, name: str,
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

    def _after_load(self, model: nn.Module) -> None:
        if self.first_forward is not None:
            for layer in model.layers:
                self.first_forward(layer)

    def _check(self) -> None:
        reason = self.not_runnable() if self.not_runnable is not None else None
        if reason is not None:
            raise NotRunnable(reason, getattr(self.not_runnable, "blocker", None))
        if self.post_load is None and self.layer is None:
            raise NotRunnable("no post-load step defined")

    def weights(self, seed: int) -> dict[str, torch.Tensor]:
        """A seeded checkpoint (different seeds give different values everywhere)."""
        gen = torch.Generator().manual_seed(seed)
        return {f"layers.{i}.{name}": _random(shape, dtype, name, gen)
                for i in range(LAYERS) for name, (shape, dtype) in self.shapes.items()}

    def build(self, seed: int) -> nn.Module:
        """A cold start: create_weights, record reload metadata, load ``seed``, post-load."""
        from vllm.model_executor.layers.quantization.base_config import QuantizeMethodBase
        from vllm.model_executor.model_loader.reload import record_metadata_for_reloading

        self._check()
        with self._running():
            model = CaseModel(self._layer)
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


# ---- post-load steps calling vLLM's own builders -------------------------------------------------

_FP8_SCALES = {"w13_weight_scale": ((E,), torch.float32), "w2_weight_scale": ((E,), torch.float32),
               "w13_input_scale": ((), torch.float32), "w2_input_scale": ((), torch.float32)}


def _fp8_qc(layer: nn.Module):  # noqa: ANN202 - vLLM's FusedMoEQuantConfig
    from vllm.model_executor.layers.fused_moe.config import fp8_w8a8_moe_quant_config

    return fp8_w8a8_moe_quant_config(w1_scale=layer.w13_weight_scale,
                                     w2_scale=layer.w2_weight_scale,
                                     a1_scale=layer.w13_input_scale,
                                     a2_scale=layer.w2_input_scale)


def _fp8_kernel(experts: str, backend: str) -> PostLoad:
    def post_load(method: nn.Module, layer: nn.Module) -> None:
        from vllm.model_executor.layers.fused_moe.oracle import fp8 as oracle_fp8

        qc = _fp8_qc(layer)
        method.moe_quant_config = qc
        method.moe_kernel = oracle_fp8.make_fp8_moe_kernel(
            qc, _moe_config(), _import(experts), getattr(oracle_fp8.Fp8MoeBackend, backend))

    return post_load


def _experts(experts: str, quant_config: Callable[[nn.Module], object],
             experts_post_load: bool = False, **kwargs: object) -> PostLoad:
    def post_load(method: nn.Module, layer: nn.Module) -> None:
        qc = quant_config(layer)
        method.moe_quant_config = qc
        method.experts = _import(experts)(_moe_config(), qc, **kwargs)
        if experts_post_load:
            method.experts.process_weights_after_loading(layer)

    return post_load


def _fp8_layer_qc(layer: nn.Module):  # noqa: ANN202
    """make_fp8_moe_quant_config(FLASHINFER_CUTLASS, layer=): registers layer.g1_alphas."""
    from vllm.model_executor.layers.fused_moe.oracle.fp8 import (
        Fp8MoeBackend,
        make_fp8_moe_quant_config,
    )

    return make_fp8_moe_quant_config(Fp8MoeBackend.FLASHINFER_CUTLASS, layer.w13_weight_scale,
                                     layer.w2_weight_scale, layer.w13_input_scale,
                                     layer.w2_input_scale, layer=layer)


def _int8_channel_qc(layer: nn.Module):  # noqa: ANN202 - vLLM's FusedMoEQuantConfig
    """int8 W8A8, per-channel weight scales, per-token activations, biased experts."""
    from vllm.model_executor.layers.fused_moe.config import int8_w8a8_moe_quant_config

    return int8_w8a8_moe_quant_config(w1_scale=layer.w13_weight_scale,
                                      w2_scale=layer.w2_weight_scale, a1_scale=None,
                                      a2_scale=None, w1_bias=layer.w13_bias,
                                      w2_bias=layer.w2_bias, per_act_token_quant=True)


_INT8 = {"w13_weight": ((E, 2 * N, H), torch.int8), "w2_weight": ((E, H, N), torch.int8),
         "w13_weight_scale": ((E, 2 * N, 1), torch.float32),
         "w2_weight_scale": ((E, H, 1), torch.float32),
         "w13_bias": ((E, 2 * N), torch.bfloat16), "w2_bias": ((E, H), torch.bfloat16)}


def _nvfp4_qc(layer: nn.Module):  # noqa: ANN202
    from vllm.model_executor.layers.fused_moe.oracle.nvfp4 import (
        NvFp4MoeBackend,
        make_nvfp4_moe_quant_config,
    )

    return make_nvfp4_moe_quant_config(
        NvFp4MoeBackend.FLASHINFER_CUTLASS, layer.w13_weight_scale, layer.w2_weight_scale,
        layer.w13_weight_scale_2, layer.w2_weight_scale_2, layer.w13_input_scale,
        layer.w2_input_scale)


_NVFP4 = {"w13_weight_scale": ((E, 2 * N, H // 16), torch.float8_e4m3fn),
          "w2_weight_scale": ((E, H, N // 16), torch.float8_e4m3fn),
          "w13_weight_scale_2": ((E,), torch.float32), "w2_weight_scale_2": ((E,), torch.float32),
          "w13_input_scale": ((E,), torch.float32), "w2_input_scale": ((E,), torch.float32)}


def _import(qualified: str) -> type:
    module, _, name = qualified.rpartition(".")
    return getattr(importlib.import_module(module), name)


@contextlib.contextmanager
def _vllm_runtime() -> Iterator[None]:
    """What vLLM's real quant methods ask for on construction: a current VllmConfig (with a
    model config naming the dtype) and a one-process model-parallel group (gloo, CPU), torn
    down again on exit so that no process group outlives the probe."""
    import tempfile
    import types

    from vllm.config import DeviceConfig, VllmConfig, set_current_vllm_config
    from vllm.distributed import init_distributed_environment, initialize_model_parallel
    from vllm.distributed.parallel_state import (
        destroy_distributed_environment,
        destroy_model_parallel,
        model_parallel_is_initialized,
    )

    config = VllmConfig(device_config=DeviceConfig(device="cpu"))
    owned = not model_parallel_is_initialized()
    with tempfile.TemporaryDirectory(prefix="dg-vllm-") as tmp:
        try:
            if owned:
                with set_current_vllm_config(config):
                    init_distributed_environment(
                        world_size=1, rank=0, local_rank=0, backend="gloo",
                        distributed_init_method=f"file://{tmp}/init")
                    initialize_model_parallel(1, 1)
            object.__setattr__(config, "model_config", types.SimpleNamespace(
                dtype=torch.bfloat16, hf_config=None, is_encoder_decoder=False, is_moe=False))
            with set_current_vllm_config(config):
                yield
        finally:
            if owned:
                destroy_model_parallel()
                destroy_distributed_environment()


def _fp8_linear() -> object:
    """vLLM's real Fp8LinearMethod, built and run through its post-load step on one layer."""
    from vllm.model_executor.layers.quantization.fp8 import Fp8Config, Fp8LinearMethod

    with _vllm_runtime():
        method = Fp8LinearMethod(Fp8Config(is_checkpoint_fp8_serialized=True,
                                           activation_scheme="static"))
        layer = nn.Module()
        method.create_weights(layer, input_size_per_partition=H, output_partition_sizes=[N],
                              input_size=H, output_size=N, params_dtype=torch.bfloat16,
                              weight_loader=lambda p, w: p.data.copy_(w))
        method.process_weights_after_loading(layer)
    return method


_EX = "vllm.model_executor.layers.fused_moe.experts"
_FP8 = {"w13_weight": ((E, 2 * N, H), torch.float8_e4m3fn),
        "w2_weight": ((E, H, N), torch.float8_e4m3fn), **_FP8_SCALES}


def cases() -> list[VllmCase]:
    """Every case, runnable or not (``build`` raises :class:`NotRunnable`), with those of
    :mod:`vllm_integration.class_cases` (one per undeclared error class of the static audit)."""
    from vllm_integration.class_cases import class_cases

    return [
        VllmCase("fp8-moe-cutlass", (f"{_EX}.cutlass_moe.CutlassExpertsFp8",), _FP8,
                 _fp8_kernel(f"{_EX}.cutlass_moe.CutlassExpertsFp8", "VLLM_CUTLASS")),
        VllmCase("fp8-moe-trtllm", (f"{_EX}.trtllm_fp8_moe.TrtLlmFp8ExpertsMonolithic",), _FP8,
                 _fp8_kernel(f"{_EX}.trtllm_fp8_moe.TrtLlmFp8ExpertsMonolithic",
                             "FLASHINFER_TRTLLM"), needs_cpu_accelerator=True),
        VllmCase("fp8-moe-flashinfer-cutlass",
                 (f"{_EX}.flashinfer_cutlass_moe.FlashInferExperts",), _FP8,
                 _experts(f"{_EX}.flashinfer_cutlass_moe.FlashInferExperts", _fp8_layer_qc)),
        VllmCase("fp8-moe-triton-or-cutlass", (f"{_EX}.triton_cutlass_moe.TritonOrCutlassExperts",
                                               f"{_EX}.cutlass_moe.CutlassExpertsFp8"), _FP8,
                 _experts(f"{_EX}.triton_cutlass_moe.TritonOrCutlassExperts", _fp8_qc)),
        VllmCase("nvfp4-moe-flashinfer-cutlass",
                 (f"{_EX}.flashinfer_cutlass_moe.FlashInferExperts",), _NVFP4,
                 _experts(f"{_EX}.flashinfer_cutlass_moe.FlashInferExperts", _nvfp4_qc,
                          experts_post_load=True)),
        VllmCase("int8-moe-zen-cpu", (f"{_EX}.cpu_moe.ZenCPUExpertsInt8",), _INT8,
                 _experts(f"{_EX}.cpu_moe.ZenCPUExpertsInt8", _int8_channel_qc)),
        VllmCase("fp8-linear", ("vllm.model_executor.layers.quantization.fp8.Fp8LinearMethod",),
                 not_runnable=attempt("Fp8LinearMethod", _fp8_linear)),
        *class_cases(),
    ]
