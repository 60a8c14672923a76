"""Write tests/resources/static_precision_outside10_judged_b.json (judge B, positions 14-26).

Fields copied from the draw: file, line, attr, category, severity, audit_reader (= reader).
The judge's reader line text is read from the installed vLLM 0.33.0 source, so it matches it
exactly. Run from the worktree root: ``python3 benchmarks/results/review19b/make_judged.py``.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import vllm

ROOT = Path(os.path.dirname(vllm.__file__)).parent  # site-packages: paths start with "vllm/"
DRAW = Path("tests/resources/static_precision_outside10_draw.json")
OUT = Path("tests/resources/static_precision_outside10_judged_b.json")
FIRST, LAST = 14, 26

P_ALIAS = "probe_quant_config_alias.py"
P_TRITON = "probe_triton_plain_attr.py"
PROBE_DIR = "benchmarks/results/review19b/"

# index -> (judgement, reader path, reader line, weight_derived, close_call, kernel_format_clause_only, why)
VERDICTS: dict[int, tuple[str, str, int, bool, bool, bool, str]] = {
    14: ("TP", "vllm/model_executor/layers/fused_moe/experts/marlin_moe.py", 770, True, False, True,
         "Store runs in MoeWNA16Method._setup_kernel, called from the quant-method PWAL: "
         "make_wna16_moe_quant_config keeps references to layer.w13_scales/w2_scales (after replace_parameter). "
         "Layerwise reload reruns that PWAL on the materialized temporaries, so the rebuilt config and moe_kernel "
         "(what eager reads) point at the temporary w13_scales; copy-back refills the kept Parameter, which the "
         "old, graph-captured config still references (fresh). A kernel-format reload after it refills only the "
         "kept Parameter, so eager reads a stale scale: TP only through the kernel-format clause. Probe "
         f"{PROBE_DIR}{P_ALIAS} [pos14]: rebuilt config reads kept param False, stale after kernel-format True. "
         "Audit reader is the shared accessor property modular_kernel.py:767 (return self.quant_config.w1_scale), "
         "not a kernel call; replaced by MarlinExperts.apply's fused_marlin_moe argument (MARLIN backend; on SM90 "
         "Humming is preferred and get_humming_moe_quant_config likewise holds the layer's scale params). "
         "derives_from layer.w13_scales is right."),
    15: ("TP", "vllm/model_executor/layers/quantization/mxfp4.py", 471, True, False, False,
         "TRITON backends: convert_gpt_oss_weight_to_mxfp4_moe_kernel_format deletes w13/w2_weight and their scale "
         "Parameters and the swizzled triton_kernels.Tensor is stored as a plain layer attribute, outside the kept "
         "tensors. Layerwise reload deletes it in restore_layer_on_meta (a restore name), reruns PWAL and binds a "
         "new object: storage moved, while the MoE call captured in the CUDA graph keeps reading the old (freed) "
         "storage; eager reads the new one. Probe "
         f"{PROBE_DIR}{P_TRITON}: reload completes, new object, storage moved, old object still holds ckpt0. "
         "Reader: GPT-OSS on TRITON prefers OAITritonMxfp4ExpertsMonolithic (Renormalize + SWIGLUOAI, no EP/DP), "
         "so apply_monolithic line 471; the audit's 448 (apply) is the same read on the modular OAITritonExperts "
         "path (EP/DP), valid but not the default. derives_from 'argument w2' = layer.w2_weight, right."),
    16: ("TP", "vllm/model_executor/layers/quantization/mxfp4.py", 1103, True, False, False,
         "Same pattern as mxfp4.py:370 in Mxfp4MoEMethod._setup_kernel: for uses_triton_weight_format (TRITON "
         "backends, or AITER_MXFP4_BF16 on gfx1250) convert_weight_to_mxfp4_moe_kernel_format deletes the weight "
         "and scale Parameters and layer.w2_weight becomes a plain attribute holding the swizzled tensor. "
         "Layerwise reload rebinds it to a new object (moved); the captured MoE graph reads the old storage. "
         f"Probe {PROBE_DIR}{P_TRITON}. Audit reader 1103 (apply, modular) is right for OAITritonExperts; "
         "apply_monolithic line 1126 reads it when the monolithic class is selected. derives_from right."),
    17: ("FP", "vllm/model_executor/layers/quantization/online/moe_base.py", 240, True, True, False,
         "The store never holds a value a reader reads after loading. Mxfp4OnlineMoEMethod's branch runs for "
         "TRITON_BACKENDS or AITER_MXFP4_FP8; AITER_MXFP4_FP8 cannot be selected for the online activation key "
         "kMxfp4Dynamic (_filter_by_activation returns []), TRITON/TRITON_UNFUSED/AITER_TRITON_MXFP4_BF16 can "
         "(explicit moe_backend). For all three, convert_weight_to_mxfp4_moe_kernel_format's TRITON branch does "
         "'del layer.w13_weight_scale': a plain online layer has no scale Parameter, so it raises AttributeError "
         "(oracle/mxfp4.py:1933) before line 238; with a requantization source that registered scales, line 238 "
         "runs but get_fused_moe_quant_config (online/mxfp4.py:278, getattr w13_weight_scale, deleted) raises in "
         "the same PWAL. Loading fails on every path that reaches the store (the code's own NOTE above "
         "get_fused_moe_quant_config says so). Probe "
         f"{PROBE_DIR}probe_online_mxfp4_triton.py (real _setup_kernel and convert, triton_kernels stubbed). "
         "Audit reader moe_base.py:240 (apply_monolithic) is the line that would read it, but it never runs "
         "after a successful load. Close call: the first review's history lists the sibling line 239 as TP."),
    18: ("TP", "vllm/model_executor/layers/fused_moe/experts/trtllm_fp8_moe.py", 495, True, False, True,
         "Online MXFP8 PWAL quantizes the bf16 checkpoint weight, registers w13_weight_scale via replace_parameter "
         "and builds the config with make_fp8_moe_quant_config (block [1, 32] -> FusedMoEQuantConfig.make "
         "'mxfp8'), which keeps the reference to layer.w13_weight_scale. Layerwise reload reruns PWAL on the "
         "temporaries: the rebuilt config/kernel (eager) reference the temporary scale, the kept scale is refilled "
         "by copy-back and is what the captured old config reads (fresh). A kernel-format reload after it leaves "
         f"eager stale. Probe {PROBE_DIR}{P_ALIAS} [pos18]. Reader: FLASHINFER_TRTLLM is first in the MXFP8 "
         "backend order (Blackwell), TrtLlmFp8ExpertsMonolithic._apply_block_scale passes "
         "quant_config.w1_scale; the audit's deep_gemm_moe.py:407 is the DEEPGEMM (second-priority) backend's "
         "read of the same config field, valid but not the default. derives_from right."),
    19: ("TP", "vllm/model_executor/layers/quantization/quark/quark_moe.py", 1974, True, False, False,
         "QuarkOCP_MX_MoEMethod._setup_kernel for TRITON_BACKENDS or AITER_MXFP4_FP8: the gpt-oss convert deletes "
         "the weight Parameters and layer.w2_weight becomes a plain attribute (triton_kernels.Tensor). W4A16 "
         "MXFP4 on Hopper selects TRITON (FlashInfer TRT-LLM needs SM100); W4A8 on ROCm AITER_MXFP4_FP8. "
         "Layerwise reload rebinds it (moved); the captured MoE graph reads the old storage. Probe "
         f"{PROBE_DIR}{P_TRITON}. Audit reader 1974 (apply, modular) right; apply_monolithic line 1996 for "
         "monolithic experts (AITER W4A8/W4A16, OAI Triton monolithic). derives_from names the convert call; "
         "the source is the checkpoint layer.w2_weight."),
    20: ("TP", "vllm/model_executor/layers/fused_moe/experts/flashinfer_cutlass_moe.py", 310, True, False, True,
         "QuarkNvfp4MoEMethod.process_weights_after_loading (quant-method PWAL) replace_parameter's the scales, "
         "then make_nvfp4_moe_quant_config passes w2_scale=layer.w2_weight_scale by reference (FlashInfer CUTLASS). "
         "Layerwise reload: rebuilt config (eager) references the temporary Parameter, kept one refilled and read "
         "by the captured old config. A kernel-format reload after it leaves eager stale. Probe "
         f"{PROBE_DIR}{P_ALIAS} [pos20]. Audit reader (FlashInferExperts.apply, self.w2_scale accessor of "
         "quant_config.w2_scale) right. Not checked: FLASHINFER_TRTLLM is first in the NVFP4 order and "
         "QuarkNvfp4MoEMethod defines no apply_monolithic (its modular TRT-LLM class reads "
         "quant_config.w2_scale too, trtllm_nvfp4_moe.py:369). derives_from right."),
    21: ("TP", "vllm/model_executor/layers/mamba/ops/cpu/gdn_attention.py", 568, True, True, True,
         "CPU only (AVX512-BF16 or aarch64 bf16, causal_conv1d_weight_pack present). UnquantizedLinearMethod PWAL "
         "-> dispatch_cpu_unquantized_gemm stashes an unpacked clone and packs layer.weight in place; the conv "
         "branch returns before remove_weight, so the weight is not emptied. Layerwise reload reruns PWAL and "
         "rebinds the stash with fresh values; the reader re-reads it per call (getattr at gdn_attention.py:404), "
         "so fresh. A kernel-format reload refills the packed conv1d.weight but not the stashed copy: the torch "
         "spec-decode conv reads stale weights (the native path reads the new packed weight). TP under the "
         "CPU reading (kernel-format reload refills the source, not its copy). Probe "
         f"{PROBE_DIR}probe_cpu_conv_unpacked.py (real dispatch and reader; pack op stubbed): reader stale True. "
         "Audit reader right; derives_from layer.weight right."),
    22: ("TP", "vllm/model_executor/layers/utils.py", 679, True, True, True,
         "Zen CPU only. dispatch_cpu_unquantized_gemm has two callers. UnquantizedLinearMethod "
         "(remove_weight=True) replaces layer.weight with empty(0): layerwise reload rebuilds the lambda "
         "(re-read per call, fresh) and a kernel-format reload raises (size mismatch) -> FP for linears. "
         "UnquantizedEmbeddingMethod (ParallelLMHead/VocabParallelEmbedding, remove_weight=False) keeps the "
         "weight: after a layerwise reload the rebuilt lambda captures the temporary's detach() view (or a "
         "prepacked copy), so a kernel-format reload after it refills the kept lm_head.weight and the logits read "
         "the old values; with VLLM_ZENTORCH_WEIGHT_PREPACK=1 (default) even a kernel-format reload right after "
         "the load is stale. Probe "
         f"{PROBE_DIR}probe_zen_cpu_linear.py (real dispatch and cpu_unquantized_gemm; zentorch ops stubbed). "
         "Close call: the history FP table judged this site on the Linear caller only. Audit reader right; "
         "derives_from layer.weight right."),
    23: ("TP", "vllm/model_executor/models/qwen3_xpress.py", 156, True, False, False,
         "build_fused_buffers runs inside Qwen3XPressForCausalLM.load_weights, so it reruns on the drafter's "
         "layerwise reload (start_draft_weight_update -> initialize_layerwise_reload(drafter) -> load_weights -> "
         "finalize) and rebinds _fused_buf to new tensors; the XPress draft step (_generate_draft -> "
         "_jacobi_refine -> jacobi_refine_greedy) is captured by the speculator's CUDA graph manager, whose "
         "replay keeps reading the old (freed) buffers. Probe "
         f"{PROBE_DIR}probe_xpress_fused_buf.py (real XPressRefinerHead): rebound, storage moved, old buffers "
         "hold ckpt0. Also seen: during that reload mix_L is on meta, so fold_from_raw_ writes into meta, the new "
         "mix_kjc is a meta tensor and mix_L keeps the old fold ('Failed to load weights'). Audit reader "
         "qwen3_xpress.py:133 (buf = self._fused_buf) is a local alias, replaced by the first kernel read of the "
         "default top-C path. derives_from self.in_proj.weight right for whc_t/wlat_t."),
    24: ("TP", "vllm/models/beam/nvidia/dflash2.py", 506, True, False, False,
         "build_context_kv_weights runs in DFlash2BeamForCausalLM.load_weights, so the drafter's layerwise reload "
         "reruns it: torch.stack(...).contiguous() is new storage, while the context K/V store "
         "(_precompute_context_kv -> precompute_and_store_context_kv -> store_context_kv) is recorded in the FULL "
         "draft CUDA graph (DFlashSpeculator._prepare_graph_forward, inherited by DFlash2Speculator): replay "
         "reads the old storage. A kernel-format reload of k_norm.weight also leaves the stacked copy stale. "
         f"Probe {PROBE_DIR}probe_dflash2_context_kv.py (real build_context_kv_weights). Audit reader right; "
         "derives_from attn.k_norm.weight right."),
    25: ("TP", "vllm/models/deepseek_v4/amd/model.py", 187, True, True, False,
         "Set by DeepseekV4MLP.prepare_gateup_preshuffle, run only from the model-level "
         "process_weights_after_loading, which no reload reruns. If weight_scale_inv is still float8_e8m0fnu "
         "there, _gateup_scale is a new fp32 upcast: a layerwise reload refills the kept weight_scale_inv, not "
         "the copy -> stale for graph and eager. Reachable when VLLM_ROCM_USE_AITER=1 (needed for _gateup) with "
         "VLLM_ROCM_USE_AITER_LINEAR=0: the Triton block-FP8 kernel keeps e8m0 scales. With the default AITER "
         "linear kernel, its PWAL upcasts weight_scale_inv in place via replace_parameter, so _gateup_scale is "
         "the kept Parameter and is refilled (FP on that configuration). Probe "
         f"{PROBE_DIR}probe_dsv4_gateup_scale.py (real reload_weights; model-level hook ran once). Close call: TP "
         "only on a non-default env setting. Audit reader and derives_from right."),
    26: ("TP", "vllm/models/deepseek_v4/amd/model.py", 497, True, True, True,
         "shared_w2 is a None non-persistent buffer from __init__, filled by the quant-method PWAL "
         "(prepare_heterogeneous_shared_expert). Layerwise reload: restore_layer_on_meta deletes the buffer, "
         "PWAL's assignment then makes a plain attribute, and _place_kernel_tensors' register_buffer raises "
         "KeyError \"attribute 'shared_w2' already exists\": the reload fails rather than going stale. A "
         "kernel-format reload refills the source shared_expert.down_proj.weight but not shared_w2 (a buffer, "
         "which get_parameter_for_reload cannot take): stale for graph and eager. TP only through the "
         "kernel-format clause, here a kernel-format reload after the initial load. Probe "
         f"{PROBE_DIR}probe_dsv4_shared_w2.py. Close call: it rests on counting that reload path. Audit reader "
         "right; derives_from names the shuffle call, the weight it comes from is "
         "shared_expert.down_proj.weight (via _prepare_native_fp8_shared_expert)."),
}


def source_line(path: str, line: int) -> str:
    text = (ROOT / path).read_text().splitlines()[line - 1].strip()
    return f"{path}:{line}: {text}"


def main() -> None:
    draw = json.loads(DRAW.read_text())
    sample = draw["sample"]
    out = []
    for index in range(FIRST, LAST + 1):
        d = sample[index]
        judgement, rpath, rline, weight_derived, close, kf_only, why = VERDICTS[index]
        store = (ROOT / d["file"]).read_text().splitlines()[d["line"] - 1]
        assert d["attr"].split(".")[-1] in store or "cpu_linear" in store, (index, store)
        reader = source_line(rpath, rline)
        out.append({
            "index": index,
            "file": d["file"],
            "line": d["line"],
            "attr": d["attr"],
            "category": d["category"],
            "severity": d["severity"],
            "audit_reader": d["reader"],
            "judgement": judgement,
            "reader": reader,
            "weight_derived": weight_derived,
            "why": why,
            "close_call": close,
            "kernel_format_clause_only": kf_only,
            "reader_quote": reader,
        })
    OUT.write_text(json.dumps(out, indent=1) + "\n")
    tp = sum(o["judgement"] == "TP" for o in out)
    print(f"wrote {OUT}: {len(out)} items, TP {tp}, FP {len(out) - tp}, "
          f"close calls {[o['index'] for o in out if o['close_call']]}, "
          f"kernel-format-clause-only {[o['index'] for o in out if o['kernel_format_clause_only']]}")
    for o in out:
        print(o["index"], o["judgement"], o["reader"])


if __name__ == "__main__":
    main()
