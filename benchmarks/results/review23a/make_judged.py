"""Write tests/resources/static_precision_outside12_judged_a.json (positions 0-19).

Reader lines are read from the installed vLLM 0.33.0 source, so the quoted text
matches it exactly.  Imports: stdlib and vllm only.
"""

import json
import os
import sys

import vllm

ROOT = os.path.dirname(vllm.__file__)
REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))
DRAW = os.path.join(REPO, "tests/resources/static_precision_outside12_draw.json")
OUT = os.path.join(REPO, "tests/resources/static_precision_outside12_judged_a.json")
PROBE = "benchmarks/results/review23a/probe_reload.out"

# index: (judgement, reader "path:line", weight_derived, close_call,
#         kernel_format_clause_only, audit_reader_verdict, derives_from_right, why)
VERDICTS = {
    0: (
        "TP",
        "models/deepseek_v4/xpu/xpu_sparse.py:115",
        True,
        False,
        True,
        "right",
        True,
        (
            "XPUFp8BlockScaledMMKernel.process_weights_after_loading (quant-method "
            "PWAL, reruns on every layerwise reload) sets layer.bmm_weight = "
            "weight.reshape(...).permute(...), a view of layer.weight. At startup "
            "that is the kept weight (replace_parameter copies in place); on a "
            "layerwise reload PWAL runs on the reload temporary, so the plain "
            "attribute becomes a view of the temporary (probe P1: 'weight_view "
            "shares kept storage: False'). Eager reads the temporary (fresh), the "
            "XPU graph still reads the refilled kept storage; a kernel-format "
            "reload after it refills only the kept weight and the eager view stays "
            "old (P1: weight_view 10.0 vs kept 100). TP only through the kernel-"
            "format clause. Audit reader (xpu_fp8_bmm argument, via line 108) is "
            "right; derives_from layer.weight is right."
        ),
    ),
    1: (
        "TP",
        "model_executor/layers/fused_moe/experts/cpu_moe.py:1655",
        True,
        False,
        True,
        "right",
        True,
        (
            "CPU-only (zentorch). ZenCPUExpertsInt8.__init__ stores "
            "self.w2_bias.detach().to(bf16).contiguous(): a copy (or, for a bf16 "
            "bias, a view of the bias the QC holds). The experts are rebuilt by "
            "CompressedTensorsW8A8Int8MoEMethod.process_weights_after_loading on "
            "every layerwise reload from the reload temporary, so eager CPU reads "
            "fresh values after a layerwise reload; a kernel-format reload (after "
            "it, or alone for a non-bf16 copy) refills the kept layer.w2_bias and "
            "not this copy/temporary (P1: bias_copy 30 vs kept 300) -> stale, which"
            " the CPU-only reading counts (same as the ZenCPU f32 scale copy). "
            "Audit reader (zentorch_fused_moe argument) right."
        ),
    ),
    2: (
        "TP",
        "model_executor/layers/fused_moe/experts/flashinfer_b12x_moe.py:293",
        False,
        False,
        False,
        "right",
        True,
        (
            "FlashInferB12xExperts.process_weights_after_loading allocates "
            "torch.ones(num_local_experts) (W4A16 case, a2_gscale None) and the "
            "experts object itself is rebuilt by the NVFP4 quant PWAL "
            "(make_nvfp4_moe_kernel in ModelOptNvFp4FusedMoE/_build_moe_kernel and "
            "the CT W4A4 method) on every layerwise reload. The old tensor dies "
            "with the old experts object while the captured CUDA graph keeps its "
            "address: storage a captured path reads is moved (P1 shows the "
            "analogous fresh product getting a new address). Value is a constant, "
            "derived from no weight; derives_from null is right. Audit reader "
            "(wrapper.run fc2_input_scale) right."
        ),
    ),
    3: (
        "TP",
        "model_executor/layers/fused_moe/experts/mxfp8_emulation_moe.py:149",
        True,
        False,
        True,
        "right",
        True,
        (
            "Mxfp8TritonExpertsBase.__init__ keeps w2_scale_val = "
            "quant_config.w2_scale, i.e. layer.w2_weight_scale as the quant PWAL "
            "saw it. Experts are rebuilt inside the PWAL (make_fp8_moe_kernel in "
            "CompressedTensorsW8A8Mxfp8MoEMethod / ModelOpt MXFP8), so after a "
            "layerwise reload the reference points at the reload temporary (P1: "
            "scale_ref is kept False); eager reads it, a kernel-format reload after"
            " it refills only the kept parameter (P1: 20 vs 200). TP by the kernel-"
            "format clause (reading 2). Line 149 runs only when w13/w2 are still "
            "1-byte MXFP8 (CT MXFP8 on EMULATION, or ModelOpt with "
            "VLLM_MXFP8_EMULATION_DEQUANT_AT_LOAD=0); ModelOpt's default dequant-"
            "at-load takes the bf16 branch instead. Audit reader right; "
            "derives_from right."
        ),
    ),
    4: (
        "TP",
        "model_executor/layers/fused_moe/experts/nvfp4_emulation_moe.py:499",
        True,
        False,
        True,
        "right",
        True,
        (
            "Nvfp4QuantizationEmulationTritonExperts.__init__ keeps w1_scale_val = "
            "quant_config.w1_scale = layer.w13_weight_scale "
            "(make_nvfp4_moe_quant_config EMULATION passes it through). Experts are"
            " built in the NVFP4 quant PWAL, so after a layerwise reload this is "
            "the reload temporary; a kernel-format reload after it leaves the eager"
            " value old (probe P1). TP by the kernel-format clause. Audit reader "
            "(invoke_fused_moe_nvfp4_emulation_kernel argument) right."
        ),
    ),
    5: (
        "TP",
        "model_executor/layers/fused_moe/eep_reconfigure.py:37",
        True,
        True,
        True,
        "weak",
        True,
        (
            "FusedMoEModularMethod.process_weights_after_loading (reruns on each "
            "layerwise reload) rebinds self.moe_quant_config to old_quant_method's "
            "freshly built QC, whose w1/w2 scales are references to the reload "
            "temporaries (P1). The forward path never reads this attribute: "
            "moe_kernel.impl's experts hold the same QC object directly. The "
            "attribute is read after loading by Elastic-EP staging "
            "(eep_reconfigure.py:37 hands it to a new experts constructor; :94 to "
            "maybe_make_prepare_finalize), which is reachable when the quant method"
            " is a FusedMoEModularMethod (LoRA, or an earlier EEP reconfigure, line"
            " 118). After layerwise + kernel-format reload those experts read stale"
            " temporaries -> TP only by the kernel-format clause, on a rare path: "
            "close call. Audit reader (line 79, the get_fused_moe_quant_config "
            "accessor) is weak: its post-load callers are "
            "_ensure_moe_quant_config_init (only when None) and deep_gemm warmup "
            "(reads quant_dtype/block_shape), neither consumes the tensors. "
            "derives_from (AutoAWQ QC holding layer.w13_scales) right."
        ),
    ),
    6: (
        "TP",
        "model_executor/layers/fused_moe/experts/flashinfer_cutlass_moe.py:310",
        True,
        False,
        False,
        "right",
        True,
        (
            "CompressedTensorsW4A4Nvfp4MoEMethod.process_weights_after_loading "
            "rebuilds the QC on every layerwise reload. For FLASHINFER_CUTLASS "
            "(make_nvfp4_moe_quant_config) it holds w2_scale = "
            "layer.w2_weight_scale (a reference that becomes the reload temporary: "
            "kernel-format clause, P1) and a1_gscale/a2_gscale = 1.0/a13_scale, "
            "1.0/a2_scale, fresh products that each rerun reallocates while the "
            "captured graph keeps the old addresses (moved storage, lines 307/309 "
            "of the same quant_scales list). So the container is TP from layerwise "
            "alone. Audit reader (w2_scale.view in the kernel's quant_scales) "
            "right; derives_from layer.w2_weight_scale right (one of its sources)."
        ),
    ),
    7: (
        "TP",
        "model_executor/layers/fused_moe/experts/triton_moe.py:442",
        True,
        False,
        True,
        "right",
        True,
        (
            "CompressedTensorsW8A8Int8MoEMethod PWAL rebuilds the QC each reload "
            "via make_int8_moe_quant_config, which passes "
            "w1_scale=layer.w13_weight_scale through (no fresh products on TRITON; "
            "a1/a2 None). After a layerwise reload TritonExperts reads the reload "
            "temporary; a kernel-format reload after it refills only the kept "
            "parameter (probe P1). TP by the kernel-format clause only. Audit "
            "reader (invoke_fused_moe_triton_kernel argument) right."
        ),
    ),
    8: (
        "TP",
        "model_executor/layers/quantization/inc/schemes/inc_wna16_linear.py:450",
        True,
        False,
        False,
        "right",
        False,
        (
            "INCARKLinearMethod.process_weights_after_loading builds a new ARK "
            "linear each PWAL, copies layer.bias into ark_linear.bias and stores "
            "layer.ark_bias = ark_linear.bias (a separate tensor). XPU (XPU graphs "
            "are supported, xpu_model_runner patches torch.cuda.graph): a layerwise"
            " reload reruns the PWAL, rebinds ark_bias to a new tensor and frees "
            "the old one the captured graph reads (moved). A kernel-format reload "
            "refills layer.bias (bias is in SKIP_TENSORS, kept live) but not the "
            "copy -> stale. Audit reader right. derives_from names ark_linear.bias,"
            " which is the stored tensor itself; the value is computed from "
            "layer.bias (ark_linear.bias.copy_(layer.bias))."
        ),
    ),
    9: (
        "TP",
        "model_executor/layers/quantization/inc/schemes/inc_wna16_moe.py:288",
        False,
        True,
        False,
        "weak",
        True,
        (
            "Lazy scratch: _get_unpermuted_row_to_permuted_row allocates the "
            "mapping on first use (warmup/capture) and remap_hidden_states_op "
            "writes it, moe_gather_op reads it. "
            "INCARKWNA16MoEMethod.process_weights_after_loading sets it to None on "
            "every layerwise reload, freeing the storage a captured XPU graph "
            "writes and reads; replay then touches freed memory (moved storage). "
            "Not weight-derived (derives_from null right); close call because it is"
            " a workspace and relies on XPU graph mode. Audit reader (line 173, the"
            " accessor's read) is weak: the consumer is the remap op call at 288 "
            "(and moe_gather_op at 321)."
        ),
    ),
    10: (
        "TP",
        "model_executor/layers/fused_moe/experts/triton_moe.py:442",
        True,
        False,
        True,
        "right",
        True,
        (
            "ModelOptFp8MoEMethod._setup_kernel rebuilds the QC in each PWAL; on "
            "TRITON the FP8 per-tensor QC references layer.w13_weight_scale (and "
            "w13_input_scale) directly, which are the reload temporaries after a "
            "layerwise reload; a kernel-format reload after it leaves the eager "
            "value old (probe P1). TP by the kernel-format clause only. Audit "
            "reader right; derives_from right."
        ),
    ),
    11: (
        "TP",
        "model_executor/layers/fused_moe/experts/flashinfer_cutlass_moe.py:310",
        True,
        False,
        False,
        "right",
        True,
        (
            "ModelOptNvFp4FusedMoE._build_moe_kernel rebuilds the QC in every PWAL."
            " FLASHINFER_CUTLASS QC: w2_scale = layer.w2_weight_scale (temporary "
            "after a layerwise reload: kernel-format clause) and "
            "a1_gscale/a2_gscale = 1.0/a13_scale, 1.0/a2_scale, fresh tensors each "
            "rerun, read by the captured graph at the old addresses (moved) -> TP "
            "from layerwise alone (the pre-processed TRTLLM path also rebuilds). "
            "Audit reader right; derives_from right."
        ),
    ),
    12: (
        "TP",
        "model_executor/layers/quantization/online/moe_base.py:240",
        True,
        False,
        False,
        "right",
        True,
        (
            "Online MXFP4 on TRITON backends (reached with moe_backend='triton' "
            "or 'aiter_triton_mxfp4_bf16'; under 'auto' the kMxfp4Dynamic "
            "matches, EMULATION included, are tried before the BF16 TRITON "
            "fallback): "
            "convert_weight_to_mxfp4_moe_kernel_format deletes the w13_weight "
            "Parameter and _setup_kernel stores a triton_kernels tensor as a plain "
            "attribute layer.w13_weight. Layerwise reload deletes that attribute, "
            "re-registers the bf16 meta params, reruns PWAL (the _already_called "
            "flag is dropped) and sets a new plain tensor; nothing is copied back, "
            "the old storage the captured graph reads is freed (moved). Audit "
            "reader (apply_monolithic, TRITON prefers "
            "OAITritonMxfp4ExpertsMonolithic) right; derives_from 'argument w13' "
            "(the quantized w13) right."
        ),
    ),
    13: (
        "TP",
        "model_executor/models/longcat_flash_ngram.py:165",
        True,
        False,
        False,
        "right",
        True,
        (
            "NgramEmbedding.load_weight writes "
            "self.oe_projection.data[index].copy_(...) around any weight_loader. On"
            " a layerwise reload the param is a meta placeholder, the write goes to"
            " meta, nothing is counted and finalize warns 'Failed to load weights' "
            "and puts the old kept tensor back: probe P2 ('_Ngram: Failed to load "
            "weights', value stays 1.0 when the checkpoint says 5.0). Stale after "
            "layerwise. Audit reader (torch.bmm in embed_batched) right; "
            "derives_from right."
        ),
    ),
    14: (
        "TP",
        "model_executor/models/qwen3_xpress.py:156",
        True,
        False,
        False,
        "right",
        True,
        (
            "Qwen3XPress load_weights ends with xpress_head.build_fused_buffers(), "
            "which allocates a new dict of .t().contiguous() copies (whc_t from "
            "in_proj.weight). A drafter layerwise reload reruns load_weights: "
            "values are fresh but every tensor gets new storage and the old dict is"
            " dropped (probe P4: 'fused storage moved: True'); the XPress draft "
            "step is CUDA-graph captured (spec_decode/xpress/speculator.py), so the"
            " graph reads freed storage. Audit reader (topc branch mm; the non-topc"
            " branch reads it at line 189) right; derives_from in_proj.weight "
            "right."
        ),
    ),
    15: (
        "TP",
        "model_executor/offloader/prefetch.py:563",
        True,
        True,
        False,
        "right",
        True,
        (
            "Prefetch CPU offloading: _cpu_storage is the source copied into the "
            "static GPU buffer before every forward (line 563, also captured in "
            "graphs). It is synced only in PrefetchOffloader.post_init "
            "(load_model). A layerwise reload copies new values into param.data, "
            "which is the shared static GPU buffer slot; a kernel-format reload "
            "does the same; neither updates _cpu_storage, so the next prefetch "
            "overwrites the new weights with the old CPU copy -> stale. "
            "reload/__init__.py documents 'Composition with CPU offloading has not "
            "been implemented' but nothing refuses it; close call for that reason. "
            "Audit reader right; derives_from self._param right."
        ),
    ),
    16: (
        "TP",
        "models/beam/nvidia/dflash2.py:428",
        True,
        False,
        False,
        "right",
        True,
        (
            "DFlash2BeamForCausalLM.load_weights calls build_context_kv_weights(), "
            "which torch.cat's the qkv_proj K/V rows into a new tensor. A drafter "
            "layerwise reload reruns it: fresh values, new storage, old tensor "
            "freed (probe P4). The DFlash draft step (context K/V precompute "
            "included, _num_graph_context_tokens) is captured FULL, so the graph "
            "reads freed storage. Audit reader (F.linear) right; derives_from "
            "right."
        ),
    ),
    17: (
        "TP",
        "models/beam/nvidia/dflash2.py:506",
        True,
        False,
        False,
        "right",
        True,
        (
            "Same rebuild as position 16: torch.stack(k_norm weights).contiguous() "
            "reallocated on every drafter load_weights (probe P4: storage moved), "
            "read by store_context_kv inside the captured draft step. Audit reader "
            "(store_context_kv argument) right; derives_from right."
        ),
    ),
    18: (
        "TP",
        "models/deepseek_v4/amd/model.py:497",
        True,
        True,
        True,
        "right",
        False,
        (
            "shared_w2 is a non-persistent buffer registered as None and set by "
            "prepare_heterogeneous_shared_expert inside "
            "DeepseekV4HeterogeneousMxfp4MoEMethod's PWAL, a shuffled copy of the "
            "shared expert's down_proj weight. Layerwise reload: "
            "restore_layer_on_meta deletes the buffer, the PWAL's assignment makes "
            "a plain attribute, and _place_kernel_tensors' register_buffer raises "
            "KeyError (probe P3: \"attribute 'shared_w2' already exists\") - a crash,"
            " not a stale value. A kernel-format reload refills "
            "shared_expert.down_proj.weight in place and leaves this copy old (P3: "
            "source 9.0, copy 1.0) -> TP only through the kernel-format path (here "
            "without a successful layerwise reload before it): close call. Audit "
            "reader (rocm_aiter_fused_experts shared_w2=) right; derives_from names"
            " the shuffle expression, not the weight (source: "
            "shared_expert.down_proj.weight and its weight_scale_inv via "
            "_prepare_native_fp8_shared_expert)."
        ),
    ),
    19: (
        "TP",
        "models/deepseek_v4/amd/rocm.py:1376",
        True,
        False,
        False,
        "right",
        True,
        (
            "_prepare_fp8_wo_a runs from prepare_attn_preshuffle, called only by "
            "the model-level process_weights_after_loading, which never reruns on "
            "reload. On ROCm AITER the block-FP8 kernel upcasts e8m0 "
            "weight_scale_inv to fp32 (scaled_mm/aiter.py:427), so "
            "_wo_a_block_scale_to_e8m0 takes the float path and builds a new uint8 "
            "tensor: a copy. Layerwise reload refills the kept fp32 scale; the e8m0"
            " copy stays old (probe P4: model-level copy 1.0, source 4.0). Audit "
            "reader (batched_gemm_a8w8_mxscale argument) right; derives_from "
            "_wo_a_block_scale_to_e8m0(scale) names the wo_a block scale it is "
            "computed from."
        ),
    ),
}

FIELDS = ("file", "line", "attr", "category", "severity")


def quote(ref: str) -> str:
    path, line = ref.rsplit(":", 1)
    with open(os.path.join(ROOT, path), encoding="utf-8") as f:
        text = f.read().splitlines()[int(line) - 1].strip()
    return f"vllm/{path}:{line}: {text}"


def main() -> int:
    with open(DRAW, encoding="utf-8") as f:
        sample = json.load(f)["sample"]
    out = []
    for i in range(20):
        d = sample[i]
        (judgement, ref, weight_derived, close, clause_only, verdict, dfr, why) = VERDICTS[i]
        reader = quote(ref)
        row = {"index": i}
        row.update({k: d[k] for k in FIELDS})
        row.update(
            {
                "audit_reader": d["reader"],
                "judgement": judgement,
                "reader": reader,
                "weight_derived": weight_derived,
                "why": why,
                "close_call": close,
                "kernel_format_clause_only": clause_only,
                "reader_quote": reader,
                "audit_reader_verdict": verdict,
                "derives_from_right": dfr,
            }
        )
        out.append(row)
    with open(OUT, "w", encoding="utf-8") as f:
        json.dump(out, f, indent=2)
        f.write("\n")
    tp = sum(r["judgement"] == "TP" for r in out)
    print(f"wrote {len(out)} rows: TP {tp} FP {len(out) - tp}; probe output {PROBE}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
