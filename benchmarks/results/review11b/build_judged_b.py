import json, os
import vllm
ROOT = os.path.dirname(os.path.dirname(vllm.__file__))
draw = json.load(open("tests/resources/static_precision_outside7_draw.json"))["sample"]

MXQ = "vllm/model_executor/layers/quantization/mxfp4.py"
TK = "vllm/model_executor/layers/fused_moe/experts/gpt_oss_triton_kernels_moe.py"
MK = "vllm/model_executor/layers/fused_moe/modular_kernel.py"
MB = "vllm/model_executor/layers/quantization/online/moe_base.py"
QK = "vllm/model_executor/layers/quantization/quark/quark_moe.py"
DF = "vllm/models/beam/nvidia/dflash2.py"
TOY = ("CPU toy benchmarks/results/review11b/toy_reload_patterns.py (vLLM's record_metadata_for_reloading, "
       "initialize/finalize_layerwise_reload, get_parameter_for_reload(...).copy_)")

J = {
 14: (MXQ, 448, "TP", True, False, False,
      "Store mxfp4.py:370 `layer.w2_weight = w2` is the TRITON_BACKENDS branch of GptOssMxfp4MoEMethod._setup_kernel "
      "(TRITON/TRITON_UNFUSED/AITER_TRITON_MXFP4_BF16, e.g. gpt-oss on Hopper): convert_gpt_oss_weight_to_mxfp4_moe_kernel_format "
      "(oracle/mxfp4.py:1444-1472) swizzles w2 into a fresh triton_kernels tensor and `del layer.w2_weight` drops the Parameter, so "
      "the value lives only as a plain layer attribute. Reader: apply() mxfp4.py:448 passes `layer.w2_weight` to moe_kernel.apply "
      "(apply_monolithic:471 likewise), inside the MoE op that CUDA graphs capture. Layerwise reload_weights: "
      "restore_layer_on_meta (reload/meta.py:127-132) deletes the plain attribute (a restore name), PWAL reruns on the temporaries "
      "and assigns a NEW swizzled tensor; w2_weight is not in kernel_tensors (not a registered Parameter at initialize), so "
      "_copy_and_restore_kernel_tensors neither copies it back nor restores the old object. Eager reads the new storage; the "
      "captured graph keeps the freed old address: storage a captured path reads moves. " + TOY +
      " pattern A: after layerwise reload w2_weight is not in _parameters and its data_ptr changed."),
 15: (MXQ, 1103, "TP", True, False, False,
      "Same pattern as mxfp4.py:370 in Mxfp4MoEMethod._setup_kernel: store mxfp4.py:855 `layer.w2_weight = w2` when "
      "uses_triton_weight_format (TRITON_BACKENDS, or AITER_MXFP4_BF16 on gfx1250); convert_weight_to_mxfp4_moe_kernel_format "
      "(oracle/mxfp4.py:1876-1934) builds a fresh triton_kernels tensor and deletes the w2_weight Parameter. Reader apply() "
      "mxfp4.py:1103 `w2=layer.w2_weight,` (apply_monolithic reads it too) runs every forward inside the captured MoE op. Layerwise "
      "reload deletes the plain attribute, reruns PWAL on temporaries and binds a new tensor at a new address that is not a kept "
      "tensor (no copy-back); the CUDA graph replays against the freed old storage. " + TOY + " pattern A confirms the move."),
 16: (TK, 830, "TP", True, False, False,
      "Container store mxfp4.py:868 `self.moe_quant_config = self.get_fused_moe_quant_config(layer)` in "
      "Mxfp4MoEMethod._build_moe_kernel, run by every PWAL. For TRITON_BACKENDS get_fused_moe_quant_config (mxfp4.py:1060ff) puts "
      "self.w13_precision_config (a PrecisionConfig wrapping the swizzled weight scales, freshly built by _swizzle_mxfp4 each PWAL) "
      "into the config; the experts built from this same object read it in forward at "
      "gpt_oss_triton_kernels_moe.py:830 `precision_config=quant_config.w1_precision,` (triton_kernel_fused_experts, called from "
      "OAITritonExperts.apply). The audit's reader modular_kernel.py:767 (w1_scale property) is the non-Triton path: there the "
      "config holds layer.w13_weight_scale, which after a layerwise reload is the reload temporary (stale after a kernel-format "
      "reload). On the Triton path a layerwise reload rebuilds the config with new swizzled-scale storage while the captured graph "
      "keeps the old addresses: storage a captured path reads moves. The audit's 'derived from no weight' is wrong: the scales "
      "are checkpoint weights."),
 17: (MB, 240, "FP", True, True, False,
      "Store online/mxfp4.py:238 `layer.w13_weight = w13` is the TRITON_BACKENDS/AITER_MXFP4_FP8 branch of "
      "Mxfp4OnlineMoEMethod._setup_kernel, and no working model reaches it. (a) TRITON backends (reachable only as the BF16 "
      "fallback of _filter_by_activation or by an explicit backend): convert_weight_to_mxfp4_moe_kernel_format deletes "
      "layer.w13_weight_scale (oracle/mxfp4.py:1933), and the next line, online/mxfp4.py:253 -> get_fused_moe_quant_config:278 "
      "`getattr(layer, f\"w13_{self.weight_scale_name}\")` (weight_scale_name='weight_scale'), raises AttributeError during the "
      "first PWAL, so loading fails (the comment at online/mxfp4.py:266-277 says the same branch is 'currently unreachable'). "
      "(b) AITER_MXFP4_FP8: PWAL sets layer.w13_input_scale = None (online/mxfp4.py:306) and the gpt-oss converter raises "
      "ValueError 'W4A8 (AITER_MXFP4_FP8) requires static input scales' (oracle/mxfp4.py:1400-1404); its activation key is also "
      "filtered out for kMxfp4Dynamic. The reader moe_base.py:240 does read layer.w13_weight, but on every backend that loads it "
      "reads the Parameter set by replace_parameter (online/mxfp4.py:244), not this store. No served model holds the stored "
      "value, so no reload path can leave it stale or move it. Close call: the pattern itself would be TP (cf. mxfp4.py:370)."),
 18: (MB, 241, "FP", True, True, False,
      "Store online/mxfp4.py:239 `layer.w2_weight = w2`, same unreachable branch as :238: TRITON backends delete "
      "w13/w2_weight_scale in the converter (oracle/mxfp4.py:1931-1934) and get_fused_moe_quant_config (online/mxfp4.py:278-279) "
      "then raises AttributeError in the first PWAL; AITER_MXFP4_FP8 raises ValueError because online PWAL set the input scales to "
      "None (online/mxfp4.py:307, oracle/mxfp4.py:1400). The reader moe_base.py:241 `layer.w2_weight,` only ever sees the "
      "replace_parameter Parameter (online/mxfp4.py:245) of the working backends. Never served, so never stale or moved. Close "
      "call for the same reason as :238."),
 19: (MK, 767, "TP", True, False, True,
      "Container store online/mxfp4.py:253 in Mxfp4OnlineMoEMethod._setup_kernel (every PWAL). On the backends that load "
      "(see :238), get_fused_moe_quant_config puts layer.w13_weight_scale / w13_bias (Parameters set by replace_parameter) into "
      "the config (make_mxfp4_moe_quant_config passes w1_scale through, oracle/mxfp4.py:2166-2200); the experts built from it "
      "read it in forward via modular_kernel.py:767 `return self.quant_config.w1_scale` (e.g. trtllm_mxfp4_moe.py:249). "
      "The audit's reader eep_reconfigure.py:37 only hands the container to new experts on an elastic-EP reconfigure. After a "
      "layerwise reload the config is rebuilt inside PWAL on the temporaries and references the temporary Parameter; "
      "copy-back refills the kept one. Eager then reads the temporary, and a kernel-format reload after it refills only the kept "
      "Parameter, leaving the eager reader stale. " + TOY + " pattern B: container is not the kept Parameter after layerwise "
      "reload and keeps 6.0 after a kernel-format copy of 30.0. TP only through the kernel-format clause (reading 2)."),
 20: (MK, 767, "TP", True, False, True,
      "Container store online/mxfp8.py:198 in Mxfp8OnlineMoEMethod._setup_kernel (every PWAL): get_fused_moe_quant_config "
      "(online/mxfp8.py:213-234) references layer.w13_weight_scale (set by replace_parameter at :195), block_shape [1,32] so "
      "no fresh per-tensor alphas. Forward reader: experts' modular_kernel.py:767 `return self.quant_config.w1_scale` "
      "(the audit's eep_reconfigure.py:37 only runs on elastic-EP reconfigure). After a layerwise reload the config built by "
      "PWAL on the temporaries points at the reload temporary; a kernel-format reload after it copies into the kept Parameter "
      "only, so the eager reader stays stale (" + TOY + ", pattern B). The audit's 'derived from no weight' is wrong: "
      "w1_scale is the quantized weight's scale. TP only through the kernel-format clause."),
 21: (MK, 775, "TP", True, False, True,
      "Container store quark_moe.py:498 in QuarkW4A16Int4MoEMethod._setup_kernel (every PWAL): get_fused_moe_quant_config "
      "(quark_moe.py:508-520) references layer.w13_weight_zero_point (asymmetric), layer.w13_weight_scale; read in forward by "
      "modular_kernel.py:775 `return self.quant_config.w1_zp` (Marlin w1_zeros=self.w1_zp, marlin_moe.py:778; triton_moe.py:791). "
      "After a layerwise reload these are the reload temporaries (zero-point and scale are registered Parameters, copy-back "
      "refills the kept ones and re-registers them); a kernel-format reload after it refills only the kept Parameters, so the "
      "eager reader reads stale zero points/scales (" + TOY + ", pattern B). TP only through the kernel-format clause."),
 22: (MK, 791, "TP", True, False, False,
      "Container store quark_moe.py:966 in QuarkW8A8Fp8MoEMethod._setup_kernel (every PWAL). get_fused_moe_quant_config "
      "calls make_fp8_moe_quant_config without layer=, so for FLASHINFER_CUTLASS/HPC per-tensor (block_shape None) "
      "oracle/fp8.py:790-809 builds FRESH g1_alphas = w1_scale * a1_scale and a1_gscale = 1/a1_scale inside the config; "
      "FlashInfer CUTLASS experts read them in forward via modular_kernel.py:791 `return self.quant_config.g1_alphas` "
      "(flashinfer_cutlass_moe.py:289). A layerwise reload rebuilds these at new addresses while the captured graph keeps the "
      "old ones (storage moves). On other backends the audit's reader modular_kernel.py:767 (w1_scale) references "
      "layer.w13_weight_scale, the reload temporary after a layerwise reload, stale after a kernel-format reload. TP either way; "
      "weight-derived (checkpoint weight and input scales), contrary to the audit's 'derived from no weight'."),
 23: (QK, 1973, "TP", True, False, False,
      "Store quark_moe.py:1852 `layer.w13_weight = w13` in QuarkOCP_MX_MoEMethod._setup_kernel for TRITON_BACKENDS or "
      "AITER_MXFP4_FP8: convert_gpt_oss_weight_to_mxfp4_moe_kernel_format deletes the w13_weight Parameter "
      "(oracle/mxfp4.py:1432/1469) and returns a fresh swizzled triton_kernels tensor; Quark's get_fused_moe_quant_config uses "
      "the precision configs on this path, so unlike online MXFP4 it loads. Reader apply() quark_moe.py:1973 "
      "`w1=layer.w13_weight,` every forward inside the captured MoE op. Layerwise reload deletes the plain attribute, reruns PWAL "
      "on temporaries and binds a new tensor that is not a kept tensor (no copy-back), so the captured graph reads freed old "
      "storage. " + TOY + " pattern A."),
 24: (TK, 830, "TP", True, False, False,
      "Store quark_moe.py:1854 `self.w13_precision_config = w13_scale` (PrecisionConfig wrapping the swizzled weight scales, "
      "built fresh each PWAL by _swizzle_mxfp4). The audit's reader quark_moe.py:1890 is get_fused_moe_quant_config, which runs "
      "inside PWAL and copies it into moe_quant_config; the value is really read in forward by the Triton experts at "
      "gpt_oss_triton_kernels_moe.py:830 `precision_config=quant_config.w1_precision,`. A layerwise reload rebuilds the "
      "precision config, the quant config and the experts at new addresses; the captured graph keeps the old, freed scale "
      "storage (moved storage on a captured path)."),
 25: (MK, 767, "TP", True, False, True,
      "Container store quark_moe.py:2112 in QuarkW8A8Mxfp8MoEMethod.process_weights_after_loading (every PWAL): "
      "get_fused_moe_quant_config (quark_moe.py:2123-2136) references layer.w13_weight_scale (replace_parameter at :2109), "
      "a1_scale None, MX block shape so no fresh alphas. Forward reader modular_kernel.py:767 `return self.quant_config.w1_scale`. "
      "After a layerwise reload the config points at the reload temporary; a kernel-format reload after it refills only the "
      "kept Parameter, so the eager reader is stale (" + TOY + ", pattern B). Weight-derived (the MXFP8 weight scales), contrary "
      "to the audit's evidence text. TP only through the kernel-format clause."),
 26: (DF, 428, "TP", True, False, False,
      "Store dflash2.py:389 `self._context_kv_weight = torch.cat([attn.qkv_proj.weight[attn.q_size:] ...])` in "
      "build_context_kv_weights, called from DFlash2BeamDraftModel.load_weights (dflash2.py:621): a copy of the K/V rows of "
      "every layer's qkv_proj.weight. Reader dflash2.py:428 `kv = F.linear(normed, self._context_kv_weight)` in "
      "precompute_and_store_context_kv, reached from DFlashSpeculator._prepare_graph_forward -> _precompute_context_kv "
      "(v1/worker/gpu/spec_decode/dflash/speculator.py:203,391), which the FULL decode CUDA graph captures "
      "(DFlash2Speculator subclasses DFlashSpeculator). Layerwise reload (draft weight update) reruns load_weights, so the "
      "attribute is rebound to a new torch.cat at a new address: the captured graph reads the freed old copy. A kernel-format "
      "reload (get_parameter_for_reload(...).copy_) refills qkv_proj.weight but never reruns build_context_kv_weights, leaving "
      "the copy stale. " + TOY + " pattern C: moved after layerwise, stale (2.0 vs 5.0) after kernel-format."),
}

items = []
for idx, (path, line, verdict, wd, close, kfc, why) in sorted(J.items()):
    d = draw[idx]
    code = open(os.path.join(ROOT, path)).read().splitlines()[line - 1].strip()
    items.append({
        "index": idx, "file": d["file"], "line": d["line"], "attr": d["attr"],
        "category": d["category"], "severity": d["severity"], "audit_reader": d["reader"],
        "judgement": verdict, "reader": f"{path}:{line}: {code}", "weight_derived": wd,
        "why": why, "close_call": close, "kernel_format_clause_only": kfc,
        "reader_quote": f"{path}:{line} {code}",
    })
json.dump({"judge": "b", "items": items}, open("tests/resources/static_precision_outside7_judged_b.json", "w"), indent=1)
print(len(items), sum(i["judgement"] == "TP" for i in items), [ (i["index"], i["reader_quote"]) for i in items])
