"""Write tests/resources/static_precision_outside11_judged_b.json (positions 14-26).

Copies the draw's fields, adds judge B's verdicts, and reads each reader line
from the installed vLLM so the quoted code matches the source exactly.
Run from the worktree root: python3 benchmarks/results/review22b/make_judged.py
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import vllm

ROOT = Path(os.path.dirname(vllm.__file__)).parent
DRAW = Path("tests/resources/static_precision_outside11_draw.json")
OUT = Path("tests/resources/static_precision_outside11_judged_b.json")
PROBE = "benchmarks/results/review22b/probe_reload.out"

# index: (reader file, line, expected substring, judgement, weight_derived,
#         close_call, kernel_format_clause_only, audit_reader_verdict,
#         derives_from_right, why)
VERDICTS: dict[int, tuple] = {
    14: (
        "vllm/model_executor/models/qwen3_dspark.py", 124,
        "_nvfp4_weight_global_scale_for_gather", "TP", True, False, False,
        "right", True,
        "ModelOptLinearMethod PWAL (markov_w2, W4A16 NVFP4 with "
        "_retain_weight_for_gather) registers _nvfp4_weight_global_scale_for_gather as "
        "a NON-PERSISTENT buffer cloned from weight_global_scale. Layerwise reload: "
        "initialize_layerwise_reload keeps the startup buffer in kernel_tensors and "
        "records it as non-persistent; PWAL reruns on the temporaries and registers a "
        "new clone with the new value; _copy_and_restore_kernel_tensors skips "
        "non-persistent buffers not loaded this round ('if name in non_persistent and "
        "name not in loaded_tensor_names: continue'), and _place_kernel_tensors "
        "re-registers the startup buffer with its OLD value. "
        "DSparkMarkovHead.apply_bias_gathered passes it to nvfp4_gathered_bias (line "
        "124; line 142 on the dequantize fallback): a stale global scale after the "
        f"first layerwise reload. Probe A ({PROBE}): weight_global_scale 2.0 -> 5.0, "
        "the buffer stays [2.0], same object, STALE. The audit's reader is the kernel "
        "call argument: right.",
    ),
    15: (
        "vllm/model_executor/layers/fused_moe/experts/triton_moe.py", 790,
        "self.w1_scale", "TP", True, False, True, "wrong", True,
        "MoeWNA16Method PWAL: replace_parameter(layer, 'w13_scales', ...) then "
        "_setup_kernel builds moe_quant_config = make_wna16_moe_quant_config("
        "w1_scale=layer.w13_scales, ...) (int4/int8_w*a16_moe_quant_config store the "
        "tensor as given) and a new experts object. In a layerwise reload PWAL runs on "
        "the reload temporaries, so the new QC and experts hold the temporary "
        "Parameter; copy-back refills and re-registers the kept param while the QC "
        "keeps the temporary (eager reads the temporary with the right values; graphs "
        "read the kept one). A kernel-format reload after it copies into the kept param "
        "only, so TritonWNA16Experts.apply reads a stale self.w1_scale: TP only through "
        "the kernel-format clause (reading 2). Probe C: after layerwise the QC scale is "
        "not the kept param; after the kernel-format reload kept 7.0, QC 2.0, STALE. "
        "Audit reader WRONG: MarlinExperts never serves MoeWNA16Config. "
        "int_wna16._backend_incompatibility_reason sets allow_marlin = not "
        "isinstance(quant_config, MoeWNA16Config) and returns 'the MoeWNA16 checkpoint "
        "layout is not supported' for MARLIN, BATCHED_MARLIN and EMULATION (probe H "
        "runs the check on a real MoeWNA16Config). The "
        "consumers are TritonWNA16Experts (TRITON), TrtLlmMxint4ExpertsMonolithic "
        "(FLASHINFER_TRTLLM), Humming and CPU experts.",
    ),
    16: (
        "vllm/model_executor/layers/quantization/mxfp4.py", 471,
        "w2=layer.w2_weight", "TP", True, False, False, "right", True,
        "GptOssMxfp4MoEMethod._setup_kernel on TRITON backends (TRITON, TRITON_UNFUSED, "
        "AITER_TRITON_MXFP4_BF16): convert_gpt_oss_weight_to_mxfp4_moe_kernel_format "
        "deletes the w13/w2 weight and scale Parameters and returns swizzled triton "
        "tensors; line 370 stores 'layer.w2_weight = w2' as a PLAIN attribute. "
        "Layerwise reload: kernel_tensors holds only registered tensors, so the plain "
        "attribute is not kept; restore_layer_on_meta deletes it and registers the "
        "checkpoint meta param; PWAL reruns and assigns a freshly allocated tensor; "
        "_place_kernel_tensors leaves plain attributes alone. The startup tensor is "
        "freed while captured CUDA graphs (the MoE op sits inside the captured pieces) "
        "keep its address: moved storage. Probe B: fresh value, new data_ptr, startup "
        "tensor no longer alive. Reader: TRITON prefers OAITritonMxfp4ExpertsMonolithic, "
        "so apply_monolithic line 471 hands it to the kernel; the audit's apply line "
        "448 does the same for the modular experts (OAITritonExperts, "
        "UnfusedOAITritonExperts): right.",
    ),
    17: (
        "vllm/model_executor/layers/quantization/mxfp4.py", 1102,
        "w1=layer.w13_weight", "TP", True, False, False, "right", True,
        "Mxfp4MoEMethod._setup_kernel with uses_triton_weight_format (TRITON_UNFUSED, "
        "the ROCm DeepSeek-V4 fallback in select_deepseek_v4_mxfp4_moe_backend, or an "
        "explicit triton/triton_unfused backend; AITER_MXFP4_BF16 on gfx1250): "
        "convert_weight_to_mxfp4_moe_kernel_format deletes the Parameters and line 854 "
        "stores 'layer.w13_weight = w13' (a new swizzled tensor) as a plain attribute. "
        "Same path as position 16: layerwise reload deletes the plain attribute, PWAL "
        "allocates a new tensor, nothing copies it back, the startup storage is freed "
        "while captured graphs read it (probe B). UnfusedOAITritonExperts is modular, "
        "so apply line 1102 hands it to the kernel: the audit's reader is right.",
    ),
    18: (
        "vllm/model_executor/layers/fused_moe/experts/gpt_oss_triton_kernels_moe.py",
        1424, "precision_config=quant_config.w1_precision", "TP", True, False, False,
        "right", True,
        "Mxfp4MoEMethod._build_moe_kernel stores moe_quant_config = "
        "get_fused_moe_quant_config(layer). On TRITON backends its scales are "
        "self.w13_precision_config / self.w2_precision_config, PrecisionConfig objects "
        "built anew by every PWAL from freshly swizzled scales, so a layerwise reload "
        "builds a new QC, experts and scale tensors and frees the startup ones while "
        "captured graphs read them (probe E: startup tensor not alive, new data_ptr). "
        "UnfusedOAITritonExperts.apply passes quant_config.w1_precision to matmul_ogs "
        "(line 1424). On the audit's FLASHINFER_TRTLLM_MXFP4_MXFP8 path (first in the "
        "non-ROCm priority list) the QC holds layer.w13_weight_scale, a reference to the "
        "reload temporary, stale only after a later kernel-format reload (probe C); "
        "trtllm_mxfp4_moe.py:249 reads it there, so the audit's reader is right. Its "
        "derives_from (w13_precision_config) is the TRITON-branch source, right for that "
        "branch but not for the TRTLLM reader it quotes (layer.w13_weight_scale there).",
    ),
    19: (
        "vllm/model_executor/layers/fused_moe/experts/rocm_aiter_moe.py", 452,
        "w1_scale=quant_config.w1_scale", "TP", True, False, True, "wrong", False,
        "Line 1004 is in _setup_kernel_k3_situ_gfx942: Kimi-K3 SiTU MXFP4 experts "
        "requantized to int4 on ROCm gfx942, backend forced to AITER_MXFP4_BF16 with "
        "AiterMxfp4Experts. After replace_parameter(layer, 'w13_weight_scale', ...), "
        "get_fused_moe_quant_config takes the non-TRITON branch (not gfx1250), so the "
        "QC holds w1_scale = layer.w13_weight_scale, a reference. Layerwise reload: "
        "PWAL on the temporaries, the QC keeps the temporary, copy-back refills the "
        "kept param (HIP graphs read the kept one, eager the temporary). A kernel-format "
        "reload after it refills only the kept param, and rocm_aiter_fused_experts "
        "passes the stale quant_config.w1_scale (line 452): TP only through the "
        "kernel-format clause (probe C). Audit reader WRONG: TrtLlmMxfp4ExpertsMonolithic "
        "(FlashInfer TRTLLM, CUDA) never serves this ROCm gfx942 path. derives_from "
        "WRONG: w13_precision_config stays None here; the QC is built from "
        "layer.w13_weight_scale / w2_weight_scale.",
    ),
    20: (
        "vllm/model_executor/layers/fused_moe/experts/triton_moe.py", 442,
        "self.w1_scale", "TP", True, False, True, "right", True,
        "Online FP8 MoE (_Fp8OnlineMoEBase._setup_kernel): no scale param exists after "
        "create_weights (bf16 weights on meta); PWAL's replace_parameter registers "
        "w13_weight_scale, then moe_quant_config = make_fp8_moe_quant_config("
        "w1_scale=layer.w13_weight_scale, ...), a reference (the Triton branch, "
        "fp8_w8a8_moe_quant_config, allocates nothing). Layerwise reload: "
        "restore_layer_on_meta registers only the bf16 meta weights, the "
        "_already_called flag is deleted, PWAL re-quantizes on the temporaries and "
        "registers a temporary w13_weight_scale that the new QC and TritonExperts hold; "
        "copy-back refills the kept scale. A kernel-format reload after it refills only "
        "the kept param, so TritonExperts._base_w13_fn reads a stale self.w1_scale. "
        "Probe D: kept 9.0, QC 3.0, STALE. TP only through the kernel-format clause. "
        "The audit's reader is right.",
    ),
    21: (
        "vllm/model_executor/layers/quantization/online/moe_base.py", 241,
        "layer.w2_weight", "FP", True, True, False, "wrong", True,
        "Line 239 runs only when the online MXFP4 backend is a TRITON backend or "
        "AITER_MXFP4_FP8. Online MXFP4 selects with activation key kMxfp4Dynamic: "
        "_filter_by_activation never offers AITER_MXFP4_FP8 (probe F: "
        "moe_backend='aiter_mxfp4_fp8' offers []), and TRITON / AITER_TRITON_MXFP4_BF16 "
        "come only as BF16 fallbacks after EMULATION or by an explicit moe_backend. On "
        "those backends loading always fails. convert_weight_to_mxfp4_moe_kernel_format's "
        "TRITON branch does 'del layer.w13_weight_scale', which online MoE layers do not "
        "have (create_weights registers only the bf16 w13/w2 weights), so an "
        "AttributeError comes before line 239. With a requantization source that "
        "created the scales, line 239 runs, but get_fused_moe_quant_config then does "
        "getattr(layer, 'w13_weight_scale') on the deleted name and raises (the vLLM "
        "comment above it says this branch is broken). Probe F shows both cases. No "
        "configuration that runs this store finishes loading, so nothing reads it after "
        "loading and no reload can leave it stale: FP. The audit's apply_monolithic "
        "line would be the consumer but never runs with this store (wrong, by the "
        "'never serves' clause). Close call: this is a reachability verdict, and the "
        "rule file's history counts online/mxfp4.py:239 as TP.",
    ),
    22: (
        "vllm/model_executor/layers/fused_moe/experts/cutlass_moe.py", 1122,
        "w1_blockscale=self.w1_scale", "TP", True, False, True, "wrong", True,
        "Mxfp4OnlineMoEMethod._setup_kernel (non-TRITON backends): replace_parameter "
        "registers w13_weight_scale (absent before PWAL), then moe_quant_config = "
        "make_mxfp4_moe_quant_config(w1_scale=getattr(layer, 'w13_weight_scale'), ...), "
        "a reference (the ocp_mx / mxfp4_w4a16 builders store it as given). Layerwise "
        "reload: the QC and the new experts hold the reload temporary; a kernel-format "
        "reload after it refills only the kept param and the eager reader goes stale "
        "(probe D). TP only through the kernel-format clause. The auto candidates for "
        "kMxfp4Dynamic start with AITER_MXFP4_MXFP4 (ROCm), CUTLASS_MXFP4_MXFP4 and "
        "EMULATION (probe F). On CUDA, CutlassExpertsMxfp4.apply passes self.w1_scale to "
        "run_cutlass_moe_mxfp4 (line 1122). Audit reader WRONG: "
        "TrtLlmMxfp4ExpertsMonolithic never serves online MXFP4. Even with "
        "moe_backend='flashinfer_trtllm', which offers FLASHINFER_TRTLLM_MXFP4_BF16, "
        "online _setup_kernel calls convert_weight_to_mxfp4_moe_kernel_format without "
        "_cache_permute_indices, and the TRTLLM branch asserts it is not None (probe G: "
        "AssertionError at oracle/mxfp4.py:1667). That configuration never finishes "
        "loading.",
    ),
    23: (
        "vllm/model_executor/layers/quantization/quark/quark_moe.py", 1402,
        "quant_config=self.moe_quant_config", "TP", True, False, True, "right", True,
        "QuarkW8A8Int8MoEMethod PWAL: replace_parameter on the scales / input scales, "
        "then moe_quant_config with w1_scale=layer.w13_weight_scale and "
        "a1_scale=layer.w13_input_scale (references; the int8_w8a8/w8a16 builders "
        "allocate nothing). In a layerwise reload these are the reload temporaries; a "
        "kernel-format reload after it refills only the kept params, and apply hands the "
        "stale QC to fused_experts (static-scale path, line 1402; the dynamic path reads "
        "it through moe_kernel's experts). TP only through the kernel-format clause "
        "(probe C). The audit's reader is right.",
    ),
    24: (
        "vllm/model_executor/layers/fused_moe/experts/aiter_mxfp4_w4a8_moe.py", 148,
        "weight_mx_scale(quant_config.w1_precision)", "TP", True, False, False, "weak",
        True,
        "QuarkOCP_MX_MoEMethod._setup_kernel on TRITON or AITER_MXFP4_FP8 backends "
        "(Quark w_mxfp4_a_fp8 with static scales selects AITER_MXFP4_FP8) stores "
        "self.w13_precision_config, a PrecisionConfig that "
        "convert_gpt_oss_weight_to_mxfp4_moe_kernel_format builds from freshly swizzled "
        "weight scales and the max static input scale. It lives on the quant method, so "
        "each layerwise reload rebuilds it with new tensors, plus a new QC and experts, "
        "and the startup tensors are freed while captured HIP graphs read them (probe "
        "E). Consumer: the AITER W4A8 forward passes "
        "weight_mx_scale(quant_config.w1_precision).storage.data to moe_gemm_a8w4 (line "
        "148). Audit reader WEAK: the shared FusedMoEExperts.w1_scale accessor, whose "
        "consumer the audit says it did not resolve.",
    ),
    25: (
        "vllm/model_executor/layers/fused_moe/experts/aiter_mxfp4_w4a8_moe.py", 168,
        "weight_mx_scale(quant_config.w2_precision)", "TP", True, False, False, "weak",
        True,
        "Same as position 24 for self.w2_precision_config: it is rebuilt with fresh "
        "swizzled w2 scales on every layerwise reload, and the startup storage is freed "
        "while captured graphs read it (probe E). Consumer: "
        "weight_mx_scale(quant_config.w2_precision).storage.data passed to the second "
        "moe_gemm_a8w4 (line 168). Audit reader WEAK: the FusedMoEExperts.w2_scale "
        "accessor with its consumer unresolved.",
    ),
    26: (
        "vllm/model_executor/layers/fused_moe/experts/flashinfer_cutlass_moe.py", 306,
        "self.a1_gscale", "TP", True, False, False, "right", True,
        "QuarkNvfp4MoEMethod PWAL builds moe_quant_config = "
        "make_nvfp4_moe_quant_config(...). For FLASHINFER_CUTLASS (also TRTLLM, CUTEDSL "
        "and CUTLASS) it holds references to w13/w2_weight_scale and the *_scale_2 "
        "params, plus fresh a1_gscale = 1.0 / a13_scale and a2_gscale = 1.0 / a2_scale. "
        "A layerwise reload rebuilds the QC: the fresh gscales get new storage and the "
        "startup ones are freed while captured graphs read them (probe E), and the "
        "referenced scales point at the reload temporaries (stale after a kernel-format "
        "reload, probe C). FlashInferExperts.apply puts self.a1_gscale into quant_scales "
        "(line 306). The audit's line 310 (self.w2_scale.view(torch.int32)) reads the "
        "container's w2_scale on the same path, so it is right, though that element on "
        "its own is TP only through the kernel-format clause.",
    ),
}

COPIED = ("file", "line", "attr", "category", "severity")


def read_line(rel: str, lineno: int, expect: str) -> str:
    text = (ROOT / rel).read_text().splitlines()[lineno - 1].strip()
    if expect not in text:
        raise SystemExit(f"{rel}:{lineno} is {text!r}, expected {expect!r} in it")
    return f"{rel}:{lineno}: {text}"


def main() -> None:
    sample = json.loads(DRAW.read_text())["sample"]
    out = []
    for index in range(14, 27):
        finding = sample[index]
        rel, lineno, expect, verdict, wderived, close, clause, arv, dfr, why = (
            VERDICTS[index]
        )
        reader = read_line(rel, lineno, expect)
        row = {"index": index}
        row.update({k: finding[k] for k in COPIED})
        row.update(
            {
                "audit_reader": finding["reader"],
                "judgement": verdict,
                "reader": reader,
                "weight_derived": wderived,
                "why": why,
                "close_call": close,
                "kernel_format_clause_only": clause,
                "reader_quote": reader,
                "audit_reader_verdict": arv,
                "derives_from_right": dfr,
            }
        )
        out.append(row)
    OUT.write_text(json.dumps(out, indent=1) + "\n")
    tp = sum(r["judgement"] == "TP" for r in out)
    print(f"wrote {OUT}: {len(out)} findings, TP {tp}, FP {len(out) - tp}")


if __name__ == "__main__":
    main()
