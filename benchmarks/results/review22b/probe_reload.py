"""CPU probes for the outside precision review 22b (positions 14-26).

Each toy layer copies one store pattern from vLLM 0.33.0 and runs vLLM's own
reload functions on it: ``record_metadata_for_reloading`` at init, a first
load plus quant-method PWAL, a layerwise reload (``initialize_layerwise_reload``
/ ``model.load_weights`` / ``finalize_layerwise_reload``) with new weights,
then a kernel-format reload (``reload_weights(is_checkpoint_format=False)``).
Printed lines are the evidence quoted in the judged file.
"""

from __future__ import annotations

import types
import weakref
from pathlib import Path

import torch
import torch.nn as nn
from vllm.model_executor.layers.fused_moe.config import (
    int4_w4a16_moe_quant_config,
    nvfp4_moe_quant_config,
)
from vllm.model_executor.layers.quantization.base_config import QuantizeMethodBase
from vllm.model_executor.model_loader.reload import (
    finalize_layerwise_reload,
    initialize_layerwise_reload,
    record_metadata_for_reloading,
)
from vllm.model_executor.model_loader.reload.inplace import reload_weights
from vllm.model_executor.utils import replace_parameter

E = 2  # experts
MODEL_CONFIG = types.SimpleNamespace(dtype=torch.float32, quantization="toy")
VLLM_CONFIG = types.SimpleNamespace(
    model_config=MODEL_CONFIG, load_config=None, lora_config=None
)


class _Base(QuantizeMethodBase):
    def create_weights(self, layer, *args, **kwargs):  # pragma: no cover
        raise NotImplementedError

    def apply(self, layer, *args, **kwargs):  # pragma: no cover
        raise NotImplementedError


def _param(*shape: int) -> nn.Parameter:
    return nn.Parameter(torch.zeros(*shape), requires_grad=False)


class NonPersistentClone(_Base):
    """modelopt.py:2682: register_buffer(clone of weight_global_scale, persistent=False)."""

    def process_weights_after_loading(self, layer):
        layer.register_buffer(
            "_gs_for_gather",
            layer.weight_global_scale.detach().clone(),
            persistent=False,
        )


class PlainAttrWeight(_Base):
    """mxfp4.py:370/854: convert deletes the params, then `layer.w2_weight = w2`."""

    def process_weights_after_loading(self, layer):
        w2 = layer.w2_weight.data * 2.0  # stands for the swizzled triton tensor
        del layer.w2_weight
        layer.w2_weight = w2


class RefInContainer(_Base):
    """moe_wna16.py:415 and siblings: replace_parameter, then a QC that holds
    `layer.w13_scales` (a reference to the layer's parameter)."""

    def process_weights_after_loading(self, layer):
        replace_parameter(layer, "w13_scales", layer.w13_scales.data.clone())
        replace_parameter(layer, "w2_scales", layer.w2_scales.data.clone())
        self.moe_quant_config = int4_w4a16_moe_quant_config(
            w1_scale=layer.w13_scales, w2_scale=layer.w2_scales, block_shape=[0, 2]
        )


class OnlineRefInContainer(_Base):
    """online/fp8.py:553, online/mxfp4.py:253: the scale param does not exist
    before PWAL; replace_parameter registers it, the QC holds a reference."""

    def process_weights_after_loading(self, layer):
        w = layer.w13_weight.data
        scale = w.abs().amax(dim=(1, 2))
        replace_parameter(layer, "w13_weight_scale", scale)
        self.moe_quant_config = int4_w4a16_moe_quant_config(
            w1_scale=layer.w13_weight_scale,
            w2_scale=layer.w13_weight_scale,
            block_shape=[0, 2],
        )


class FreshInContainer(_Base):
    """quark_moe.py:2385 (NVFP4, FlashInfer CUTLASS): the QC holds references
    to the params and a fresh `1.0 / a13_scale`; quark_moe.py:1854 stores a
    fresh PrecisionConfig-like object on the quant method."""

    def process_weights_after_loading(self, layer):
        self.moe_quant_config = nvfp4_moe_quant_config(
            g1_alphas=layer.w13_weight_scale_2,
            g2_alphas=layer.w2_weight_scale_2,
            a1_gscale=(1.0 / layer.w13_input_scale_2),
            a2_gscale=(1.0 / layer.w2_input_scale_2),
            w1_scale=layer.w13_weight_scale,
            w2_scale=layer.w2_weight_scale,
        )
        self.w13_precision_config = types.SimpleNamespace(
            scale=layer.w13_weight_scale.data.flip(0).contiguous()
        )


class Layer(nn.Module):
    def __init__(self, method: QuantizeMethodBase, params: dict[str, tuple[int, ...]]):
        super().__init__()
        self.quant_method = method
        for name, shape in params.items():
            self.register_parameter(name, _param(*shape))


class Model(nn.Module):
    def __init__(self, layer: Layer):
        super().__init__()
        self.layer = layer

    def load_weights(self, weights):
        loaded = set()
        for name, w in weights:
            param = self.get_parameter(name)
            param.weight_loader(param, w)
            loaded.add(name)
        return loaded


def _default_loader(param, loaded_weight):
    param.data.copy_(loaded_weight)


def build(method, params):
    layer = Layer(method, params)
    for p in layer.parameters():
        p.weight_loader = _default_loader
    model = Model(layer)
    record_metadata_for_reloading(model)  # as initialize_model does
    return model


def first_load(model, weights):
    model.load_weights((f"layer.{n}", w) for n, w in weights.items())
    model.layer.quant_method.process_weights_after_loading(model.layer)


def layerwise_reload(model, weights):
    initialize_layerwise_reload(model)
    model.load_weights((f"layer.{n}", w) for n, w in weights.items())
    finalize_layerwise_reload(model, MODEL_CONFIG)


def kernel_format_reload(model, weights):
    reload_weights(
        VLLM_CONFIG,
        model,
        [(f"layer.{n}", w) for n, w in weights.items()],
        None,
        is_checkpoint_format=False,
    )


def probe_nonpersistent_clone() -> None:
    print("== A  non-persistent buffer clone (pos 14, modelopt.py:2682)")
    model = build(NonPersistentClone(), {"weight": (4,), "weight_global_scale": (1,)})
    layer = model.layer
    first_load(model, {"weight": torch.ones(4), "weight_global_scale": torch.tensor([2.0])})
    startup_buf = layer._gs_for_gather
    print("startup buffer value", startup_buf.tolist())
    layerwise_reload(
        model, {"weight": torch.ones(4), "weight_global_scale": torch.tensor([5.0])}
    )
    print("after layerwise reload: weight_global_scale", layer.weight_global_scale.tolist())
    print(
        "after layerwise reload: _gs_for_gather",
        layer._gs_for_gather.tolist(),
        "same object as startup:",
        layer._gs_for_gather is startup_buf,
        "STALE" if layer._gs_for_gather.item() != 5.0 else "fresh",
    )


def probe_plain_attr_weight() -> None:
    print("== B  plain-attribute kernel weight (pos 16/17, mxfp4.py:370/854)")
    model = build(PlainAttrWeight(), {"w2_weight": (E, 3)})
    layer = model.layer
    first_load(model, {"w2_weight": torch.ones(E, 3)})
    startup = layer.w2_weight
    startup_ref = weakref.ref(startup)
    startup_ptr = startup.data_ptr()
    del startup
    print("startup is Parameter:", isinstance(layer.w2_weight, nn.Parameter),
          "registered:", "w2_weight" in layer._parameters)
    layerwise_reload(model, {"w2_weight": torch.full((E, 3), 3.0)})
    now = layer.w2_weight
    print(
        "after layerwise reload: value",
        now[0].tolist(),
        "same storage as startup:",
        now.data_ptr() == startup_ptr,
        "startup tensor alive:",
        startup_ref() is not None,
    )


def probe_ref_in_container(method, params, load1, load2, load3, name) -> None:
    model = build(method, params)
    layer = model.layer
    first_load(model, load1)
    qc = method.moe_quant_config
    kept = getattr(layer, name)
    print("startup: QC w1_scale is layer param:", qc.w1_scale is kept)
    layerwise_reload(model, load2)
    qc = method.moe_quant_config
    kept_after = getattr(layer, name)
    print(
        "after layerwise reload: kept param same object:",
        kept_after is kept,
        "| QC w1_scale is kept param:",
        qc.w1_scale is kept_after,
        "| QC value",
        qc.w1_scale.flatten()[:2].tolist(),
        "kept value",
        kept_after.flatten()[:2].tolist(),
    )
    kernel_format_reload(model, load3)
    print(
        "after kernel-format reload: kept value",
        getattr(layer, name).flatten()[:2].tolist(),
        "| QC (eager reader) value",
        qc.w1_scale.flatten()[:2].tolist(),
        "STALE" if not torch.equal(qc.w1_scale, getattr(layer, name)) else "fresh",
    )


def probe_fresh_in_container() -> None:
    print("== E  fresh tensors in the container / on the quant method (pos 24-26)")
    params = {
        "w13_weight_scale": (E, 4),
        "w2_weight_scale": (E, 4),
        "w13_weight_scale_2": (E,),
        "w2_weight_scale_2": (E,),
        "w13_input_scale_2": (E,),
        "w2_input_scale_2": (E,),
    }
    method = FreshInContainer()
    model = build(method, params)

    def weights(v):
        return {n: torch.full(s, v) for n, s in params.items()}

    first_load(model, weights(2.0))
    a1 = method.moe_quant_config.a1_gscale
    pc = method.w13_precision_config.scale
    a1_ref, pc_ref = weakref.ref(a1), weakref.ref(pc)
    a1_ptr, pc_ptr = a1.data_ptr(), pc.data_ptr()
    print("startup a1_gscale", a1.tolist(), "precision scale", pc[0].tolist())
    del a1, pc
    layerwise_reload(model, weights(4.0))
    a1n = method.moe_quant_config.a1_gscale
    pcn = method.w13_precision_config.scale
    print(
        "after layerwise reload: a1_gscale",
        a1n.tolist(),
        "same storage as startup:",
        a1n.data_ptr() == a1_ptr,
        "startup a1_gscale alive:",
        a1_ref() is not None,
    )
    print(
        "after layerwise reload: precision scale",
        pcn[0].tolist(),
        "same storage as startup:",
        pcn.data_ptr() == pc_ptr,
        "startup precision scale alive:",
        pc_ref() is not None,
    )


def probe_online_mxfp4_triton() -> None:
    """online/mxfp4.py:239 only runs for TRITON backends; show what happens."""
    print("== F  online MXFP4 _setup_kernel on a TRITON backend (pos 21)")
    import vllm.model_executor.layers.fused_moe.oracle.mxfp4 as oracle
    from vllm.model_executor.layers.fused_moe.oracle.mxfp4 import Mxfp4MoeBackend
    from vllm.model_executor.layers.quantization.online.mxfp4 import (
        Mxfp4OnlineMoEMethod,
    )

    # triton_kernels is not installed here: stub the swizzle and the configs.
    oracle._swizzle_mxfp4 = lambda w, s: (w * 1, None, s * 1)
    oracle._mx_scale_kwargs = lambda s: {"scale": s}
    oracle.PrecisionConfig = lambda **kw: types.SimpleNamespace(**kw)
    oracle.FlexCtx = lambda **kw: types.SimpleNamespace(**kw)

    fake = types.SimpleNamespace(
        mxfp4_backend=Mxfp4MoeBackend.TRITON,
        moe=types.SimpleNamespace(use_mxfp4_w4a4_dsv4=False),
        weight_scale_name="weight_scale",
    )
    fake.get_fused_moe_quant_config = types.MethodType(
        Mxfp4OnlineMoEMethod.get_fused_moe_quant_config, fake
    )
    w13, w2 = torch.zeros(E, 4, 2), torch.zeros(E, 2, 2)
    s13, s2 = torch.ones(E, 4, 2), torch.ones(E, 2, 2)

    from vllm.model_executor.layers.quantization.utils.quant_utils import (
        kMxfp4Dynamic,
    )

    offered = oracle._filter_by_activation(
        oracle._get_priority_backends_for_gpt_oss(), kMxfp4Dynamic
    )
    print("auto candidates for kMxfp4Dynamic:", [b.value for b in offered])
    for alias in ("triton", "aiter", "aiter_mxfp4_fp8", "flashinfer_trtllm"):
        picked = oracle._get_requested_backends(alias, kMxfp4Dynamic)
        print(f"moe_backend={alias!r} offers:", [b.value for b in picked])

    for with_source_scales in (False, True):
        layer = nn.Module()
        layer.register_parameter("w13_weight", _param(E, 4, 4))
        layer.register_parameter("w2_weight", _param(E, 2, 4))
        if with_source_scales:  # e.g. a requantization source that created scales
            layer.register_parameter("w13_weight_scale", _param(E, 4, 2))
            layer.register_parameter("w2_weight_scale", _param(E, 2, 2))
        layer.w13_input_scale = None
        layer.w2_input_scale = None
        try:
            Mxfp4OnlineMoEMethod._setup_kernel(fake, layer, w13, w2, s13, s2, None, None)
            outcome = "returned"
        except AttributeError as e:
            outcome = f"AttributeError: {e}"
        stored = "w2_weight" in layer.__dict__
        print(
            f"layer has source scales={with_source_scales}: {outcome} "
            f"| line-239 store ran: {stored}"
        )


def probe_online_mxfp4_trtllm() -> None:
    """online/mxfp4.py:253 with the audit's TRTLLM backend: convert asserts."""
    print("== G  online MXFP4 _setup_kernel on FLASHINFER_TRTLLM_MXFP4_BF16 (pos 22)")
    from vllm.model_executor.layers.fused_moe.oracle.mxfp4 import Mxfp4MoeBackend
    from vllm.model_executor.layers.quantization.online.mxfp4 import (
        Mxfp4OnlineMoEMethod,
    )

    fake = types.SimpleNamespace(
        mxfp4_backend=Mxfp4MoeBackend.FLASHINFER_TRTLLM_MXFP4_BF16,
        moe=types.SimpleNamespace(use_mxfp4_w4a4_dsv4=False),
        weight_scale_name="weight_scale",
    )
    layer = nn.Module()
    layer.register_parameter("w13_weight", _param(E, 4, 4))
    layer.register_parameter("w2_weight", _param(E, 2, 4))
    w13, w2 = torch.zeros(E, 4, 2), torch.zeros(E, 2, 2)
    s13, s2 = torch.ones(E, 4, 2), torch.ones(E, 2, 2)
    try:
        Mxfp4OnlineMoEMethod._setup_kernel(fake, layer, w13, w2, s13, s2, None, None)
        outcome = "returned"
    except AssertionError as e:
        import traceback

        last = traceback.extract_tb(e.__traceback__)[-1]
        outcome = f"AssertionError at {Path(last.filename).name}:{last.lineno}: {last.line}"
    print(outcome)


def probe_wna16_marlin() -> None:
    """moe_wna16.py:415: can MarlinExperts serve a MoeWNA16Config layer?"""
    print("== H  WNA16 backend compatibility for MoeWNA16Config (pos 15)")
    from vllm.model_executor.layers.fused_moe.oracle import int_wna16
    from vllm.model_executor.layers.quantization.moe_wna16 import MoeWNA16Config

    cfg = MoeWNA16Config(
        linear_quant_method="gptq",
        weight_bits=4,
        group_size=128,
        has_zp=False,
        lm_head_quantized=False,
        modules_to_not_convert=None,
        full_config={},
    )
    for backend in int_wna16.WNA16MoEBackend:
        if backend in (int_wna16.WNA16MoEBackend.ZEN_CPU,):
            continue
        try:
            reason = int_wna16._backend_incompatibility_reason(
                backend, None, cfg, False, False, False
            )
        except Exception as e:  # noqa: BLE001 - report what the check does
            reason = f"raised {type(e).__name__}"
        print(f"{backend.value}: {reason or 'compatible'}")


def main() -> None:
    torch.manual_seed(0)
    probe_nonpersistent_clone()
    probe_plain_attr_weight()

    print("== C  QC holds a reference to the layer's scale param (pos 15/18/19/23)")
    params = {"w13_qweight": (E, 4), "w13_scales": (E, 2), "w2_scales": (E, 2)}

    def w(v):
        return {n: torch.full(s, v) for n, s in params.items()}

    probe_ref_in_container(RefInContainer(), params, w(1.0), w(2.0), w(7.0), "w13_scales")

    print("== D  online: PWAL registers the scale, the QC holds it (pos 20/22)")
    probe_ref_in_container(
        OnlineRefInContainer(),
        {"w13_weight": (E, 2, 2)},
        {"w13_weight": torch.full((E, 2, 2), 1.0)},
        {"w13_weight": torch.full((E, 2, 2), 3.0)},
        {"w13_weight": torch.full((E, 2, 2), 0.5), "w13_weight_scale": torch.full((E,), 9.0)},
        "w13_weight_scale",
    )
    probe_fresh_in_container()
    probe_online_mxfp4_triton()
    probe_online_mxfp4_trtllm()
    probe_wna16_marlin()


if __name__ == "__main__":
    main()
