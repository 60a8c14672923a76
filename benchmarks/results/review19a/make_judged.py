"""Write tests/resources/static_precision_outside10_judged_a.json (judge A,
positions 0-13 of the outside10 draw).

Reader lines are read from the installed vLLM 0.33.0 source so the quoted
text matches it exactly. Run from the worktree root:
    python3 benchmarks/results/review19a/make_judged.py
"""

import json
import os
from pathlib import Path

import vllm

SITE = Path(os.path.dirname(vllm.__file__)).parent  # holds vllm/
DRAW = Path("tests/resources/static_precision_outside10_draw.json")
OUT = Path("tests/resources/static_precision_outside10_judged_a.json")

MARLIN = "vllm/model_executor/layers/fused_moe/experts/marlin_moe.py:770"
TRITON_W1 = "vllm/model_executor/layers/fused_moe/experts/triton_moe.py:442"

PROBE1 = "benchmarks/results/review19a/probe_reload_patterns.out"
PROBE2 = "benchmarks/results/review19a/probe_real_moe.out"

QC_REF_TAIL = (
    "Layerwise reload_weights reruns this quant-method PWAL on the materialised "
    "temporaries (layerwise.py:_layerwise_process), so the rebuilt quant config holds "
    "the temporary Parameter; copy-back (_copy_and_restore_kernel_tensors) refills the "
    "kept Parameter in place and re-registers it. The captured graph (old experts, "
    "old quant config) reads the kept Parameter: fresh. Eager reads the temporary: "
    "fresh until a kernel-format reload (reload_weights is_checkpoint_format=False, "
    "get_parameter_for_reload(...).copy_) refills only the kept Parameter, which "
    "leaves the eager value stale. TP only through the kernel-format clause "
    f"(probe {PROBE1}, pattern qc_ref: layerwise eager_ptr_same=False, "
    "old_captured_fresh=True; kernel-format eager_fresh=False)."
)

# index -> (reader "path:line", judgement, weight_derived, close_call,
#            kernel_format_clause_only, why)
J = {
    0: (
        "vllm/models/deepseek_v4/xpu/xpu_sparse.py:109", "TP", True, False, False,
        "Store: XPUFp8BlockScaledMMKernel._prepare_bmm_params, called from the kernel's "
        "PWAL when layer.is_bmm (set for DeepSeek-V4 wo_a, models/deepseek_v4/attention.py:279), "
        "sets layer.bmm_scale = scale_kn.reshape(...).permute(1, 0, 2).contiguous(): a plain "
        "tensor attribute, a new copy of the checkpoint weight scale (weight_scale_inv). "
        "Layerwise reload_weights reruns the FP8 linear PWAL on the temporaries and rebinds "
        "layer.bmm_scale to a new tensor (plain attributes are neither kept nor copied back); "
        "the old one is freed. DeepseekV4XPUAttention._o_proj reads self.wo_a.bmm_scale on each "
        "call and passes it to torch.ops.vllm.xpu_fp8_bmm (xpu_sparse.py:113-120). _o_proj runs "
        "inside the captured graph (deepseek_v4/attention.py:475-505: only the indexer/MLA run "
        "in the eager break), and XPU graphs are on by default (platforms/xpu.py:383, "
        "supports_xpu_graph = torch>=2.11). So the captured graph reads moved, freed storage. "
        "In addition, a kernel-format reload refills the kept weight_scale_inv (a .t() view "
        "Parameter) but not this contiguous copy: stale in eager too. "
        f"Probe {PROBE1}, pattern attr_copy (bmm_scale): layerwise moves it "
        "(eager_ptr_same=False, old_captured_fresh=False); kernel-format leaves it stale. "
        "The audit's reader is right: line 109 reads the attribute, and the kernel call that "
        "consumes it is xpu_sparse.py:113. derives_from 'argument scale_kn' is right "
        "(scale_kn = weight_scale_inv.t().contiguous()).",
    ),
    1: (
        "vllm/model_executor/layers/fused_moe/experts/flashinfer_b12x_moe.py:293", "TP", False,
        False, False,
        "Store: FlashInferB12xExperts.process_weights_after_loading does "
        "self.a2_gscale.fill_(1.0), then self._fc2_input_scale = self.a2_gscale. For the "
        "FLASHINFER_B12X backend, a2_gscale is the fresh tensor 1.0 / a2_scale that "
        "make_nvfp4_moe_quant_config allocates (oracle/nvfp4.py:591), so the quant config owns it. "
        "Each layerwise reload reruns ModelOptNvFp4FusedMoE PWAL -> _build_moe_kernel "
        "(modelopt.py:1104-1116): new quant config, new experts, new _fc2_input_scale. The old "
        "quant config and experts are dropped, so the tensor is freed. The CUDA graph that "
        "captured apply (wrapper.run(..., fc2_input_scale=self._fc2_input_scale), line 293) reads "
        "the freed storage: TP through 'moves storage a captured path reads'. The value is the "
        "constant 1.0 (the W4A16 branch uses torch.ones), so it is not weight-derived. The "
        "audit's evidence 'derived from a weight' is wrong: it comes from w2_input_scale only "
        "before fill_(1.0). "
        f"Probe {PROBE2} (real make_nvfp4_moe_quant_config and FlashInferB12xExperts on CPU): "
        "after reload_weights(is_checkpoint_format=True), _fc2_input_scale has a new data_ptr and "
        "the old tensor is dead (weakref None). Audit reader agrees.",
    ),
    2: (
        "vllm/model_executor/layers/fused_moe/experts/flashinfer_b12x_moe.py:291", "TP", True,
        False, True,
        "Store: the experts PWAL rebinds layer.w13_weight_scale.data to the w_gs-baked scale, then "
        "sets w1_sf_mma = flashinfer convert_sf_to_mma_layout(self.w1_scale.reshape(...)). That is "
        "a strided VIEW of w1_scale (flashinfer/cute_dsl/utils.py:367: 'a strided view (not "
        "contiguous)'), not the new tensor the audit's reason says. self.w1_scale is "
        "quant_config.w1_scale = layer.w13_weight_scale (modelopt.py:1131). At first load it views "
        "the kept Parameter's storage. After a layerwise reload, PWAL ran on the temporaries, so "
        "the new experts' view is of the temporary's storage while copy-back refills the kept "
        "Parameter. The captured graph (old experts) views the kept storage, which is fresh. Eager "
        "reads the temporary: fresh until a kernel-format reload after it refills only the kept "
        "w13_weight_scale, and then the eager view is stale. TP only through the kernel-format "
        f"clause. Probe {PROBE2}, [b12x ...] lines: the old captured view is on the kept storage; "
        "the new view is on other storage; after the kernel-format reload the eager view is still "
        f"c1-derived. Same in {PROBE1}, pattern mma_view. The audit's reader is right.",
    ),
    3: (
        "vllm/model_executor/layers/fused_moe/experts/ocp_mx_emulation_moe.py:202", "TP", True,
        False, True,
        "Store: OCP_MXQuantizationEmulationTritonExperts.__init__ sets w1_scale_val = "
        "quant_config.w1_scale, a reference to layer.w13_weight_scale: for the emulation backend, "
        "QuarkOCP_MX_MoEMethod.get_fused_moe_quant_config passes the layer Parameter "
        "(quark_moe.py:1913/1920/1938), and _setup_kernel rebuilds the config and experts on "
        "every PWAL (quark_moe.py:1870-1879). The same holds for Mxfp4MoEMethod's EMULATION. "
        + QC_REF_TAIL
        + " The audit's reader is right: apply passes self.w1_scale_val to the dequantizer on "
        "each call. This is the 'experts object's w1_scale_val' case that the rule's second "
        "reading names.",
    ),
    4: (
        MARLIN, "TP", True, False, True,
        "Store: AutoAWQMoEMethod._setup_kernel (called from every PWAL) sets "
        "self.moe_quant_config = make_wna16_moe_quant_config(w1_scale=layer.w13_scales, ...) "
        "(auto_awq.py:727): a container that holds the layer's Parameters by reference (the "
        "config.py builders allocate nothing). "
        + QC_REF_TAIL
        + " The audit's reader is wrong: modular_kernel.py:767 is the shared accessor property "
        "FusedMoEExperts.w1_scale, and the audit left the consumer unresolved. The real reader is "
        "the kernel call in MarlinExperts.apply (fused_marlin_moe(..., w1_scale=self.w1_scale)). "
        "Marlin is the WNA16 MoE backend that CUDA picks ahead of Triton "
        "(oracle/int_wna16.py:133-142). The verdict does not change.",
    ),
    5: (
        MARLIN, "TP", True, False, True,
        "Store: AutoGPTQMoEMethod._setup_kernel (auto_gptq.py:693, run from PWAL) builds "
        "gptq_marlin_moe_quant_config(w1_scale=layer.w13_scales, ...) (auto_gptq.py:725), a "
        "container that references the layer Parameters. PWAL's replace_parameter changes the "
        "scale layout (transpose), so .data is rebound on the temporary; the config still "
        "references the temporary Parameter object "
        f"({PROBE1}, pattern qc_ref_T gives the same result as qc_ref). "
        + QC_REF_TAIL
        + " The audit's reader is wrong: the accessor modular_kernel.py:767, with the consumer "
        "unresolved. The real reader is MarlinExperts.apply's fused_marlin_moe(..., "
        "w1_scale=self.w1_scale). The verdict does not change.",
    ),
    6: (
        "vllm/model_executor/layers/fused_moe/experts/flashinfer_cutlass_moe.py:290", "TP", True,
        False, False,
        "Store: CompressedTensorsW8A8Fp8MoEMethod PWAL sets self.moe_quant_config = "
        "make_fp8_moe_quant_config(fp8_backend, w1_scale=layer.w13_weight_scale, ..., layer=layer) "
        "(lines 320 and 333) on every PWAL. For static per-tensor checkpoints on SM90+, FlashInfer "
        "CUTLASS is a supported backend, selected ahead of Triton (FlashInferExperts "
        "_supports_quant_scheme (kFp8StaticTensorSym, kFp8StaticTensorSym); oracle/fp8.py:88-104 "
        "priority). There the container also owns fresh tensors a1_gscale = 1/a1_scale and "
        "a2_gscale = 1/a2_scale (oracle/fp8.py:808-809). A layerwise reload rebuilds them and the "
        "old config is freed, so the captured FlashInferExperts.apply (quant_scales=[g1_alphas, "
        "self.a2_gscale, ...], line 290) reads moved, freed storage: TP without the kernel-format "
        f"clause. Probe {PROBE2}, [fp8 fi-cutlass ...] lines (real make_fp8_moe_quant_config): "
        "a2_gscale gets a new data_ptr and the old one is dead. The audit's reader "
        "(triton_moe.py:442, TritonExperts self.w1_scale) is also a real reader. On that backend "
        "the container only references layer.w13_weight_scale, so the site is TP there only "
        "through the kernel-format clause (after a layerwise reload the config points at the "
        "temporary: same probe, 'qc.w1_scale is kept layer param: False'). The verdict is TP "
        "either way. derives_from (layer.w13_weight_scale) is right, but it is not the only "
        "source: the container also carries the 1/input_scale products.",
    ),
    7: (
        TRITON_W1, "TP", True, False, True,
        "Store: CompressedTensorsW8A8Int8MoEMethod PWAL (line 222) sets self.moe_quant_config = "
        "make_int8_moe_quant_config(w1_scale=layer.w13_weight_scale, a1_scale=layer.w13_input_scale, "
        "...) (line 236). Its builders (int8_w8a8 / int8_w8a16_moe_quant_config) only reference "
        "the layer Parameters. The kernel and experts are rebuilt on every PWAL (line 224). "
        + QC_REF_TAIL
        + " The audit's reader is right: TritonExperts is the Int8MoeBackend.TRITON experts "
        "(oracle/int8.py:53-56), and _base_w13_fn passes self.w1_scale to "
        "invoke_fused_moe_triton_kernel.",
    ),
    8: (
        MARLIN, "TP", True, False, True,
        "Store: CompressedTensorsWNA16MoEMethod._setup_kernel (run from PWAL) sets "
        "self.moe_quant_config = make_wna16_moe_quant_config(w1_scale=layer.w13_weight_scale, "
        "...) (line 498): references to the layer Parameters, which replace_parameter refills "
        "or rebinds through .data after the Marlin repack. "
        + QC_REF_TAIL
        + " The audit's reader is wrong: the accessor modular_kernel.py:767, with the consumer "
        "unresolved. The real reader is MarlinExperts.apply's fused_marlin_moe(..., "
        "w1_scale=self.w1_scale). The verdict does not change.",
    ),
    9: (
        "vllm/model_executor/layers/quantization/compressed_tensors/schemes/compressed_tensors_wNa8o8.py:254",
        "TP", False, False, False,
        "Store: CompressedTensorsWNA8O8Int.process_weights_after_loading sets self._output_scale = "
        "_take_act_scale(layer, 'output_scale'), which is param.data.clone() followed by "
        "delattr(layer, 'output_scale'): a plain tensor attribute on the scheme object. On a "
        "layerwise reload, output_scale is restored from the recorded metadata, loaded and taken "
        "again, and _output_scale is rebound to a new clone, so the old one is freed. "
        "apply_weights reads self._output_scale on each call (line 254). Linear layers run inside "
        "the captured CUDA graph, so the graph reads moved, freed storage (with a different static "
        "scale after the reload): TP without the kernel-format clause. "
        f"Probe {PROBE1}, pattern attr_copy (_output_scale): the delattr'd checkpoint param reloads "
        "without error, and the attribute moves (eager_ptr_same=False, old_captured_fresh=False). "
        "A kernel-format reload cannot carry output_scale at all, because it is no longer a "
        "Parameter. The audit's reader is right. The evidence 'derived from a weight' is loose: "
        "the value is a static output-activation scale from the checkpoint, not a weight or "
        "weight scale.",
    ),
    10: (
        "vllm/model_executor/layers/fused_moe/experts/triton_moe.py:579", "TP", True, False, True,
        "Store: Fp8MoEMethod.get_fused_moe_quant_config (called by _init_moe_kernel on every PWAL) "
        "sets quant_config._w2.bias = layer.w2_bias (line 797), a reference to the layer "
        "Parameter. w2_bias is not in SKIP_TENSORS ({..., 'bias'} matches exact names, "
        "reload/meta.py:38), so it is re-materialised as a temporary. "
        + QC_REF_TAIL.replace("pattern qc_ref:", "pattern qc_ref (qc.w2_bias):")
        + " The audit's reader is right: Fp8MoeBackend.TRITON's TritonExperts passes "
        "B_bias=self.w2_bias, which is quant_config.w2_bias. This is the rule's 'quant config's "
        "_w1.bias' case.",
    ),
    11: (
        MARLIN, "TP", True, False, True,
        "Store: INCMxfp4MoEMethod.process_weights_after_loading sets self.moe_quant_config = "
        "get_fused_moe_quant_config(layer) (line 214), which references layer.w13_weight_scale and "
        "layer.w2_weight_scale (lines 157/163). With the Marlin fallback for devices without "
        "native FP4 (prepare_moe_fp4_layer_for_marlin replace_parameter's the scales), "
        "make_mxfp4_moe_quant_config(MARLIN) passes them through "
        "(oracle/mxfp4.py, mxfp4_w4a16_moe_quant_config). The kernel is rebuilt on every PWAL. "
        + QC_REF_TAIL
        + " The audit's reader is wrong: the accessor modular_kernel.py:767, with the consumer "
        "unresolved. The real reader is MarlinExperts.apply's fused_marlin_moe(..., "
        "w1_scale=self.w1_scale). The verdict does not change.",
    ),
    12: (
        "vllm/model_executor/layers/quantization/inc/schemes/inc_wna16_linear.py:450", "TP", True,
        True, False,
        "Store: INCARKLinearMethod PWAL builds an auto_round_kernel QuantLinear, copies layer.bias "
        "into its bias (ark_linear.bias.copy_(layer.bias)), runs post_init, then sets "
        "layer.ark_bias = ark_linear.bias. In auto-round-lib 0.16.0's qlinear.py (the only wheel "
        "with auto_round_kernel.qlinear; auto-round-kernel 0.9.2.1 lacks it), bias is a "
        "register_buffer, and post_init rebinds it to bias.to(torch_dt) (fp16 on XPU). So "
        "ark_bias is a plain tensor attribute on the layer: a copy of the checkpoint bias, not the "
        "Parameter. On a layerwise reload, layer.bias is skipped from meta (SKIP_TENSORS) and "
        "refilled in place, PWAL builds a new QuantLinear, and ark_bias is rebound (moved). On "
        "XPU (ARK's GPU target), graphs are on by default (platforms/xpu.py:383), and the linear's "
        "apply_weights (inc_ark_woq_linear with layer.ark_bias, line 450) sits in the captured "
        "graph, which reads the freed storage: TP without the clause. On CPU (no graph), the "
        "layerwise reload rebinds the attribute and the reader rereads it, but a kernel-format "
        "reload refills layer.bias and not its copy ark_bias, so it goes stale "
        f"(probe {PROBE1}, pattern attr_copy). Close call: it rests on the external package's "
        "QuantLinear (a buffer, not a Parameter; had it been a Parameter, layer.ark_bias would be "
        "a registered, kept and refilled Parameter, and the site would be FP). That package is "
        "not installed here; I read the 0.16.0 wheel. The audit's reader is right. Its "
        "derives_from 'ark_linear.bias' is only the direct source: the value comes from layer.bias "
        "by copy_ and .to().",
    ),
    13: (
        "vllm/model_executor/models/qwen3_dspark.py:123", "TP", True, False, False,
        "Store: ModelOpt W4A16 NVFP4 linear PWAL (modelopt.py:2664-2682), for layers with "
        "_retain_weight_for_gather (DSparkMarkovHead.markov_w2, qwen3_dspark.py:80), does "
        "register_buffer('_nvfp4_weight_scale_for_gather', layer.weight_scale.detach().clone(), "
        "persistent=False). On a layerwise reload, the kept non-persistent buffer is captured at "
        "initialize, the PWAL on the temporaries registers a new clone, and copy-back skips "
        "non-persistent buffers that were not loaded (layerwise.py:428-430, PR #44371 behaviour). "
        "_place_kernel_tensors then re-registers the kept buffer, which still holds the "
        "first-load values. Eager and graph both read a stale scale. A kernel-format reload of "
        "weight_scale leaves the clone stale too. "
        f"Probe {PROBE1}, pattern np_buffer: eager_ptr_same=True, eager_fresh=False after the "
        "layerwise reload. The audit's reader is right: apply_bias_gathered passes the buffer to "
        "nvfp4_gathered_bias on CUDA (the fallback at line 136 reads it too).",
    ),
}


def reader_line(ref: str) -> str:
    path, line = ref.rsplit(":", 1)
    text = (SITE / path).read_text().splitlines()[int(line) - 1].strip()
    return f"{path}:{line}: {text}"


def main() -> None:
    draw = json.loads(DRAW.read_text())["sample"]
    out = []
    for i in range(14):
        d = draw[i]
        ref, verdict, wd, close, kf_only, why = J[i]
        reader = reader_line(ref)
        out.append(
            {
                "index": i,
                "file": d["file"],
                "line": d["line"],
                "attr": d["attr"],
                "category": d["category"],
                "severity": d["severity"],
                "audit_reader": d["reader"],
                "judgement": verdict,
                "reader": reader,
                "weight_derived": wd,
                "why": why,
                "close_call": close,
                "kernel_format_clause_only": kf_only,
                "reader_quote": reader,
            }
        )
    OUT.write_text(json.dumps(out, indent=1) + "\n")
    tp = sum(o["judgement"] == "TP" for o in out)
    print(f"wrote {OUT}: {tp} TP / {len(out) - tp} FP of {len(out)}; "
          f"close calls {[o['index'] for o in out if o['close_call']]}; "
          f"kernel-format-clause-only {[o['index'] for o in out if o['kernel_format_clause_only']]}")
    for o in out:
        print(o["index"], o["judgement"], o["reader"])


if __name__ == "__main__":
    main()
