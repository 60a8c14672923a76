"""Write tests/resources/static_precision_outside8_judged_b.json (judge b, positions 14-26).

Every reader quote is checked against the installed vLLM source before writing.
"""
import json
import os
import sys

import vllm

VROOT = os.path.dirname(os.path.dirname(vllm.__file__))
DRAW = "tests/resources/static_precision_outside8_draw.json"
OUT = "tests/resources/static_precision_outside8_judged_b.json"
TOY = "benchmarks/results/review13b/cpu_check_outside8_b.py (output: cpu_check_outside8_b.out)"

FM = "vllm/model_executor/layers/fused_moe/experts/"

J = {
    14: dict(
        reader=FM + "triton_moe.py:579", judgement="TP", weight_derived=True,
        close_call=True, kernel_format_clause_only=True,
        why=(
            "Store: FP8 MoE get_fused_moe_quant_config sets quant_config._w2.bias = layer.w2_bias; it is called from "
            "_init_moe_kernel inside the quant-method PWAL, so a layerwise reload rebuilds the config on the reload "
            "temporaries and, after copy-back into the kept w2_bias, the config (and the experts built with it) keeps "
            "the temporary. Eager reads the temporary; a kernel-format reload after it copies into the kept w2_bias only, "
            "so the config's bias stays old (toy A: kept 3.5, config 2.5). A graph captured before the reload reads the "
            "kept bias, which both paths refill. TP only through the 'kernel-format reload after it' clause and the "
            "published temporary-alias reading; close call for that reason. Reader: the FP8 Triton experts pass "
            "self.w2_bias (modular_kernel.py:787 -> config.py:367 self._w2.bias) as B_bias; MarlinExperts "
            "(marlin_moe.py:769 bias2=self.w2_bias) reads it too. Evidence error: the audit's reader "
            "aiter_mxfp4_w4a16_moe.py:256 is the AITER MXFP4 W4A16 backend, which FP8 MoE never builds (wrong reader; "
            "FlashInfer CUTLASS reads w2_bias only in its mxfp4 branch, flashinfer_cutlass_moe.py:322)."
        )),
    15: dict(
        reader=FM + "deep_gemm_moe.py:407", judgement="TP", weight_derived=True,
        close_call=True, kernel_format_clause_only=True,
        why=(
            "Store: INC MXFP8 MoE PWAL sets self.moe_quant_config = get_fused_moe_quant_config(layer), whose "
            "w1_scale/w2_scale are references to layer.w13_weight_scale/w2_weight_scale after replace_parameter "
            "(make_fp8_moe_quant_config, block [1,32] branch: FusedMoEQuantConfig.make('mxfp8', w1_scale=...)). The same "
            "object is the experts' quant_config (make_fp8_moe_kernel). After a layerwise reload it holds the reload "
            "temporaries; a kernel-format reload after it refills only the kept scale params, so eager MoE reads old "
            "scales (toy A). Graphs captured before the reload read the kept params (refilled). TP only via the "
            "kernel-format clause (temporary-alias reading): close call. Reader: DeepGemmExperts.apply passes "
            "self.w1_scale (modular_kernel.py:767) into m_grouped_fp8_gemm_nt_contiguous. Evidence: the audit's reader "
            "modular_kernel.py:767 is the property accessor, not the kernel call (weak reader, replaced)."
        )),
    16: dict(
        reader="vllm/model_executor/layers/quantization/inc/schemes/inc_wna16_moe.py:311", judgement="TP",
        weight_derived=True, close_call=True, kernel_format_clause_only=True,
        why=(
            "Store: ARK XPU WNA16 MoE PWAL stores self.w2_moe = ark.MoeSymmetricGemm.prepare(layer.w2_weight, "
            "layer.w2_scales, ...) where layer.w2_weight is the (xor-flipped, replace_parameter'd) w2_qweight. apply() "
            "runs self.w2_moe.apply(...) on every forward. A kernel-format reload copies into the kept w2_qweight/"
            "w2_scales but never re-runs prepare: if prepare keeps its own prepared copy, it is stale at once; if it "
            "keeps references, after a layerwise reload they point at the reload temporaries (PWAL ran on them), and a "
            "kernel-format reload after it leaves them stale. Either way TP under the kernel-format clause. A layerwise "
            "reload alone rebuilds w2_moe (eager fresh); on XPU with XPU graphs (xpu_model_runner.py:70-72) the captured "
            "graph would keep the old prepared storage if prepare copies, which would make it TP without the clause, "
            "but that rests on auto_round_kernel code that is not installed here and was not read. Close call: the "
            "value is held by an object from outside vLLM. Audit reader correct."
        )),
    17: dict(
        reader="vllm/model_executor/models/qwen3_dspark.py:124", judgement="TP", weight_derived=True,
        close_call=False, kernel_format_clause_only=False,
        why=(
            "Store: ModelOpt NVFP4 W4A16 linear PWAL (for a ParallelLMHead with _retain_weight_for_gather, the DSpark "
            "markov_w2) registers a non-persistent buffer _nvfp4_weight_global_scale_for_gather = "
            "weight_global_scale.detach().clone(). On a layerwise reload the PWAL reruns on the temporaries and "
            "registers a new buffer with the new value, but _copy_and_restore_kernel_tensors skips non-persistent "
            "buffers that were not loaded this round (layerwise.py:429-430) and _place_kernel_tensors re-registers "
            "the kept buffer: the layer keeps the OLD clone while weight_global_scale is new (toy B: scale 2.0, buffer "
            "1.0; after a kernel-format reload scale 3.0, buffer 1.0). DSparkMarkovHead.apply_bias_gathered reads it "
            "on every call, as an argument of the Triton nvfp4_gathered_bias kernel (and in the dequantize fallback at "
            "line 142). Stale after a plain layerwise reload, so not clause-only. Audit reader correct."
        )),
    18: dict(
        reader="vllm/model_executor/layers/quantization/modelopt_block_quant.py:421", judgement="TP",
        weight_derived=True, close_call=False, kernel_format_clause_only=False,
        why=(
            "Store: the b12x block-quant linear PWAL packs the weight (api.pack_weight) into a new object stored as "
            "plain attribute layer.b12x_block_weight, then replace_parameter(layer, 'weight', empty(0)). apply() "
            "passes layer.b12x_block_weight to api.mm on every call, and plans are prepared for cudagraph capture "
            "sizes. A layerwise reload reruns the PWAL on the temporaries and rebinds the attribute to a new packed "
            "object: eager is fresh but a CUDA graph captured before the reload keeps the old packed storage (toy D: "
            "storage moved, old tensor keeps the old values), so the reload moves storage a captured path reads. A "
            "kernel-format reload raises instead (copy_ into the emptied [0] weight, toy D), so the TP rests on the "
            "layerwise path, not on the kernel-format clause. Audit reader correct."
        )),
    19: dict(
        reader=FM + "marlin_moe.py:770", judgement="TP", weight_derived=True,
        close_call=True, kernel_format_clause_only=True,
        why=(
            "Store: MoeWNA16Method._setup_kernel (called from the quant-method PWAL) builds self.moe_quant_config with "
            "w1_scale=layer.w13_scales / w2_scale=layer.w2_scales (make_wna16_moe_quant_config keeps references) and "
            "builds the experts with it. After a layerwise reload those are the reload temporaries; a kernel-format "
            "reload after it refills only the kept scale params, so eager reads old scales (toy A). TP only via the "
            "kernel-format clause (temporary-alias reading): close call. Reader: MarlinExperts.apply passes "
            "self.w1_scale (= quant_config.w1_scale) to fused_marlin_moe; TritonWNA16Experts reads it at "
            "triton_moe.py:790. Evidence: the audit's reader modular_kernel.py:767 is the property accessor "
            "(weak reader, replaced)."
        )),
    20: dict(
        reader="vllm/model_executor/layers/quantization/mxfp4.py:447", judgement="TP", weight_derived=True,
        close_call=False, kernel_format_clause_only=False,
        why=(
            "Store: GPT-OSS MXFP4, Triton backends: convert_gpt_oss_weight_to_mxfp4_moe_kernel_format swizzles the "
            "weight into a new triton_kernels tensor and deletes the w13_weight Parameter (oracle/mxfp4.py:1469); "
            "line 369 stores the new tensor as a plain layer attribute. apply() passes layer.w13_weight to the modular "
            "kernel on every call (triton matmul_ogs). A layerwise reload re-registers the meta param, reruns the PWAL "
            "on the temporaries and rebinds the plain attribute to new storage; the old tensor is dropped, so a CUDA "
            "graph captured before the reload reads moved storage (toy C: storage moved). A kernel-format reload "
            "cannot reach it (get_parameter raises: not an nn.Parameter). TP by the layerwise path; this is the "
            "reference's own example of a plain tensor attribute. Audit reader correct."
        )),
    21: dict(
        reader="vllm/model_executor/layers/quantization/mxfp4.py:1102", judgement="TP", weight_derived=True,
        close_call=False, kernel_format_clause_only=False,
        why=(
            "Store: Mxfp4MoEMethod._setup_kernel, Triton weight format (TRITON_BACKENDS or AITER_MXFP4_BF16 on "
            "gfx1250): convert_weight_to_mxfp4_moe_kernel_format swizzles w13 into a new triton_kernels tensor and "
            "deletes the Parameter (oracle/mxfp4.py:1931); line 854 stores it as a plain attribute. apply() passes it "
            "to the MoE kernel on every call. A layerwise reload rebinds the attribute to new storage from the rerun "
            "PWAL, so a graph captured before it reads moved storage (toy C). A kernel-format reload raises (not a "
            "Parameter). TP by the layerwise path. Audit reader correct."
        )),
    22: dict(
        reader="vllm/model_executor/layers/quantization/mxfp4.py:1103", judgement="TP", weight_derived=True,
        close_call=False, kernel_format_clause_only=False,
        why=(
            "Same construct as line 854 for w2: the swizzled triton_kernels tensor replaces the deleted w2_weight "
            "Parameter (oracle/mxfp4.py:1932) as a plain attribute; apply() passes it to the kernel every call; a "
            "layerwise reload moves its storage under a captured graph (toy C). Audit reader correct."
        )),
    23: dict(
        reader=FM + "gpt_oss_triton_kernels_moe.py:830", judgement="TP", weight_derived=True,
        close_call=False, kernel_format_clause_only=False,
        why=(
            "Store: self.w13_precision_config = w13_scale, a triton PrecisionConfig holding the swizzled weight scale "
            "(the w13_weight_scale Parameter is deleted, oracle/mxfp4.py:1933). It becomes quant_config._w1.scale "
            "(make_mxfp4_moe_quant_config) and the OAI Triton experts pass quant_config.w1_precision to matmul_ogs "
            "(and matmul at line 752 for triton_kernels 3.8). A layerwise reload reruns the PWAL: a new PrecisionConfig "
            "with new scale storage is stored on the method and in a new config; a graph captured before it reads the "
            "old storage (moved, toy C pattern). Kernel-format reload cannot refill it (no Parameter). TP by the "
            "layerwise path. Evidence error: the audit's reader mxfp4.py:1061 (w1_scale = self.w13_precision_config) "
            "is get_fused_moe_quant_config, called from _build_moe_kernel inside PWAL (or a lazy re-init at "
            "routed_experts.py:249 only when the config is None): it builds the container, it is not the kernel read; "
            "replaced by the matmul_ogs line."
        )),
    24: dict(
        reader=FM + "cutlass_moe.py:1122", judgement="TP", weight_derived=True,
        close_call=True, kernel_format_clause_only=True,
        why=(
            "Store: online MXFP4 MoE (Mxfp4OnlineMoEMethod._setup_kernel, in the quant-method PWAL) builds "
            "self.moe_quant_config from layer.w13_weight_scale/w2_weight_scale, the scales it just quantized and "
            "registered via replace_parameter (the Triton branch is unreachable per the code's own note; the "
            "kMxfp4Dynamic backends use ocp_mx_moe_quant_config, which keeps references). After a layerwise reload "
            "(bf16 source reloaded on meta, PWAL requantizes on temporaries, copy-back into the kept fp4 scales) the "
            "config holds the temporaries; a kernel-format reload after it refills only the kept scales, so eager "
            "reads old scales (toy A). TP only via the kernel-format clause: close call. Reader: CutlassExpertsMxfp4.apply "
            "passes w1_blockscale=self.w1_scale (AITER MXFP4 backends read it likewise). Evidence: audit reader "
            "modular_kernel.py:767 is the property accessor (weak reader, replaced)."
        )),
    25: dict(
        reader=FM + "deep_gemm_moe.py:407", judgement="TP", weight_derived=True,
        close_call=True, kernel_format_clause_only=True,
        why=(
            "Store: online MXFP8 MoE _setup_kernel (quant-method PWAL) builds self.moe_quant_config with references to "
            "the freshly quantized layer.w13_weight_scale/w2_weight_scale (make_fp8_moe_quant_config, mxfp8 block "
            "[1,32] branch) and the experts with it. After a layerwise reload it holds the reload temporaries; a "
            "kernel-format reload after it refills only the kept scales: eager reads old scales (toy A). TP only via "
            "the kernel-format clause (temporary-alias reading): close call. Reader: DeepGemmExperts.apply (MXFP8 "
            "DeepGEMM backend) passes self.w1_scale into the grouped GEMM. Evidence: audit reader modular_kernel.py:767 "
            "is the property accessor (weak reader, replaced)."
        )),
    26: dict(
        reader=FM + "marlin_moe.py:770", judgement="TP", weight_derived=True,
        close_call=True, kernel_format_clause_only=True,
        why=(
            "Store: QuarkW4A16Int4MoEMethod._setup_kernel (quant-method PWAL) builds self.moe_quant_config with "
            "w1_scale=layer.w13_weight_scale / w2_scale=layer.w2_weight_scale (references, make_wna16_moe_quant_config) "
            "and the experts with it. After a layerwise reload they are the reload temporaries; a kernel-format reload "
            "after it refills only the kept params, so eager reads old scales (toy A). TP only via the kernel-format "
            "clause (temporary-alias reading): close call. Reader: MarlinExperts.apply passes self.w1_scale to "
            "fused_marlin_moe. Evidence: audit reader modular_kernel.py:767 is the property accessor (weak reader, "
            "replaced)."
        )),
}


def quote(ref: str) -> str:
    path, line = ref.rsplit(":", 1)
    with open(os.path.join(VROOT, path)) as f:
        return f.read().splitlines()[int(line) - 1].strip()


def main() -> None:
    draw = json.load(open(DRAW))["sample"]
    items = []
    for idx in range(14, 27):
        d = draw[idx]
        j = J[idx]
        text = quote(j["reader"])
        assert text, j["reader"]
        items.append({
            "index": idx,
            "file": d["file"],
            "line": d["line"],
            "attr": d["attr"],
            "category": d["category"],
            "severity": d["severity"],
            "audit_reader": d["reader"],
            "judgement": j["judgement"],
            "reader": f"{j['reader']}: {text}",
            "weight_derived": j["weight_derived"],
            "why": j["why"] + f" CPU toy: {TOY}.",
            "close_call": j["close_call"],
            "kernel_format_clause_only": j["kernel_format_clause_only"],
            "reader_quote": f"{j['reader']} {text}",
        })
    with open(OUT, "w") as f:
        json.dump({"judge": "b", "items": items}, f, indent=1)
        f.write("\n")
    for it in items:
        print(it["index"], it["judgement"], "close" if it["close_call"] else "-", it["reader_quote"])
    tp = sum(it["judgement"] == "TP" for it in items)
    print(f"TP {tp} FP {len(items) - tp}", file=sys.stderr)


if __name__ == "__main__":
    main()
