"""Write tests/resources/static_precision_outside8_judged_c.json (judge C, positions 27-39)
and check that every reader quote is verbatim in the installed vLLM source."""

import json
import os
import sys

import vllm

ROOT = os.path.dirname(os.path.dirname(vllm.__file__))  # site-packages
DRAW = "tests/resources/static_precision_outside8_draw.json"
OUT = "tests/resources/static_precision_outside8_judged_c.json"

# index -> (judgement, reader "file:line", weight_derived, kernel_format_clause_only,
#           close_call, why)
V = {
    27: ("TP", "vllm/model_executor/layers/fused_moe/experts/aiter_mxfp4_w4a8_moe.py:148", True, False, False,
         "On the Triton-format backends (AITER_MXFP4_FP8, the ROCm default for the W4A8 scheme, and TRITON/"
         "AITER_TRITON for W4A16) _setup_kernel deletes w13_weight/w13_weight_scale (oracle/mxfp4.py del layer.*) "
         "and keeps the swizzled MX scale only inside a triton PrecisionConfig on the quant method. Layerwise "
         "reload reruns _setup_kernel on the temporaries: a new PrecisionConfig with new scale storage, a new "
         "moe_quant_config and moe_kernel. Neither the config nor its tensors are registered, so copy-back never "
         "touches them; eager reads the new one, the captured graph keeps the old scale storage (freed once the "
         "old config is dropped): the reload moves storage a captured path reads (toy_triton_precision: the reload "
         "completes, the config's scale moves, the startup tensor keeps the old value). Evidence error: the audit's "
         "reader quark_moe.py:1890 (get_fused_moe_quant_config: w1_scale = self.w13_precision_config) only builds "
         "the quant config; the kernel read is the w4a8 experts' moe_gemm_a8w4 argument quoted here (for TRITON "
         "W4A16: gpt_oss_triton_kernels_moe.py:830 precision_config=quant_config.w1_precision)."),
    28: ("TP", "vllm/model_executor/layers/mamba/ops/cpu/gdn_attention.py:553", True, True, False,
         "CPU-only. dispatch_cpu_unquantized_gemm packs conv1d.weight in place (weight.data = packed) and keeps an "
         "unpacked clone in _cpu_unpacked_conv_weight, which the GDN spec-decode fallbacks read (_spec_forward:553, "
         "and the non-native-conv branches :625/:782 via causal_conv1d_torch). Layerwise reload reruns the PWAL "
         "and rebinds the clone, read afresh each call: fresh (toy: unpacked == new weight). A kernel-format reload "
         "refills the packed conv1d.weight parameter but not the clone: stale (toy: packed == C1, unpacked still "
         "C2). TP by the CPU reading through the kernel-format clause only. Audit reader gdn_attention.py:404 (the "
         "getattr in the helper) is a real read; the consumer is quoted here."),
    29: ("TP", "vllm/model_executor/layers/utils.py:601", True, True, True,
         "CPU (Zen). The lambda captures zen_weight: a zentorch-prepacked copy (VLLM_ZENTORCH_WEIGHT_PREPACK "
         "defaults to 1) or, without prepack, layer.weight.detach(). For Linear (linear.py:217 remove_weight=True) "
         "the weight is emptied, so kernel-format copy_ raises and layerwise rebuilds the closure: FP there (toy: "
         "size-0 copy error; layerwise fresh). But the same site serves UnquantizedEmbeddingMethod "
         "(vocab_parallel_embedding.py:71 remove_weight=False), i.e. lm_head logits via LogitsProcessor._apply_head "
         "-> quant_method.apply -> cpu_unquantized_gemm -> layer.cpu_linear: lm_head.weight stays a full parameter, "
         "a kernel-format reload refills it and the closure keeps the old prepacked copy (toy with vLLM's own "
         "dispatch and reload functions: max error 12.2 after kernel-format reload, 0 after layerwise). Without "
         "prepack, a layerwise reload leaves the closure on the reload temporary, stale after a kernel-format reload "
         "after it. Close call: the published FP table lists utils.py:599 as FP because 'Linear empties the weight'; "
         "that holds for Linear only, not for the embedding/lm_head caller. Audit reader utils.py:679 (the call of "
         "layer.cpu_linear) is the call site; the captured tensor is read at :601."),
    30: ("TP", "vllm/models/deepseek_v4/amd/model.py:497", True, True, True,
         "shared_w2 is a non-persistent buffer declared None in __init__ and assigned in the routed experts' "
         "quant-method PWAL from the *shared expert's* down_proj.weight (FP8 -> expanded E8M0 scales -> "
         "shuffle_weight_a16w4). Layerwise reload raises: restore_layer_on_meta deletes the buffer, PWAL's "
         "reassignment makes it a plain attribute, and _place_kernel_tensors' register_buffer fails with KeyError "
         "\"attribute 'shared_w2' already exists\" (toy with vLLM's reload functions). A kernel-format reload of "
         "the shared expert's down_proj.weight/weight_scale_inv refills those parameters in place but never "
         "recomputes shared_w2 (a buffer, not addressable by get_parameter_for_reload): the HIP-graph path "
         "rocm_aiter_fused_experts(shared_w2=...) reads a stale copy. TP only through a kernel-format reload "
         "(close call: it rests on reading a stand-alone kernel-format reload as a reload path, as the CPU reading's "
         "example does). Audit reader correct."),
    31: ("TP", "vllm/models/deepseek_v4/amd/rocm.py:1256", True, False, True,
         "prepare_attn_preshuffle runs only in the model-level PWAL (model.py:1599), which no reload reruns. _prep "
         "stores ws = weight_scale_inv itself when fp32 (a reference to the kept parameter, refilled in place: FP) "
         "but a fresh _upcast_e8m0_to_fp32 copy when the parameter is still E8M0. With the default "
         "VLLM_ROCM_USE_AITER_LINEAR=1 the AiterFp8BlockScaledMMKernel PWAL (scaled_mm/aiter.py:426-427) already "
         "upcasts the scale to fp32, so the default path is the FP reference. With VLLM_ROCM_USE_AITER=1 and "
         "VLLM_ROCM_USE_AITER_LINEAR=0 (TritonFp8BlockScaledMMKernel keeps E8M0 on gfx950, "
         "process_fp8_weight_block_strategy) DeepSeek-V4-Flash's E8M0 scales take the copy branch: a layerwise "
         "reload refills fused_wqa_wkv.weight_scale_inv but _wqa_wkv_scale keeps the old values, read by the "
         "bpreshuffle GEMM in the captured path. TP in that supported configuration; close call because the "
         "default configuration is FP. Audit reader correct."),
    32: ("TP", "vllm/models/deepseek_v4/amd/rocm.py:1376", True, False, False,
         "_prepare_fp8_wo_a (gfx950 + VLLM_ROCM_USE_AITER_FP8BMM=1) runs once from the model-level PWAL. With the "
         "default AITER linear kernel wo_a.weight_scale_inv is upcast to fp32 at layer PWAL (scaled_mm/aiter.py:426), "
         "so _wo_a_block_scale_to_e8m0 re-encodes it into a new uint8 tensor and _wo_a_e8m0_scale is a view of that "
         "copy. Layerwise reload refills wo_a.weight_scale_inv in place but never re-encodes: "
         "batched_gemm_a8w8_mxscale in _o_proj (captured) reads stale scales. (With the scale still E8M0 the "
         "function returns a view of the kept parameter and the site would be FP.) Audit reader is the kernel "
         "argument line; correct."),
    33: ("FP", "vllm/models/flint/model.py:222", True, False, True,
         "The lazy LLMoEWeights is built once; its tensors are the router gate.weight, an int32 view of the "
         "shared-expert weights, a set_() alias of the kept weight_scale storage and weight_global_scale.reshape(1)"
         ".float() (a view: fp32 already) - all kept parameters, refilled in place by either reload path (reading "
         "2: lazy container of references, FP). Its one non-parameter member, experts (FlintMoEWeights), cannot be "
         "reloaded at all: layerwise reload raises in FlintNvfp4Experts._repack (the load set is already full, the "
         "copies land in meta params, torch.equal on meta -> NotImplementedError, checked on CPU), and a "
         "kernel-format reload cannot address the expert tensors (_repack deleted the parameters). Close call: "
         "the cache does pin a non-kept object; it is saved only because the experts are not reloadable. Audit "
         "reader correct."),
    34: ("TP", "vllm/models/flint/ops/linear.py:132", True, False, False,
         "Python float from the checkpoint weight_global_scale (reading 3, named there). A kernel-format reload "
         "refills weight_global_scale but nothing recomputes flint_global_scale, so even eager _dequant_gemm uses "
         "the old alpha; after a layerwise reload the PWAL rebinds the float but the compiled forward baked the "
         "old constant (toy_compile_float: with vLLM's dropped guards a compiled forward keeps alpha=2.0 after the "
         "attribute is rebound to 5.0). Audit reader correct (the function is the module-level _dequant_gemm)."),
    35: ("TP", "vllm/models/kimi_k3/nvidia/specialized_decode/cutedsl/gemm/projection.py:105", True, False, True,
         "PreparedDenseMLP (built once by KimiK3ModelState, never rebuilt on reload) hands PreparedProjection a "
         "padded copy F.pad(down.detach(), ...) whenever the TP-local intermediate is not 128-aligned (TP16: "
         "2112 -> 2176, dense.py:61-62); the TMA map and weight_view point at that copy. Layerwise reload refills "
         "mlp.down_proj.weight in place; the copy read by the captured FULL-graph split-K GEMM stays old. At TP8 "
         "the weight is the kept parameter itself and the site is FP, hence close call. Evidence error: the audit's "
         "reader projection.py:93 (weight_map, builds the TMA descriptor at prepare time) only takes the address; "
         "the data read is the kernel launch in run() quoted here."),
    36: ("TP", "vllm/models/kimi_k3/nvidia/specialized_decode/cutedsl/mla/prepared.py:223", True, False, False,
         "stock_scales = (scale*_q_scale_float*_k_scale_float, _k_scale_float): Python floats from the checkpoint "
         "q/k scales, built once with the SpecializedDecode and passed as bmm1/bmm2 scalars to the trtllm-gen / "
         "tokenspeed decode that only runs under FULL graph capture (baked). A layerwise reload reruns the MLA "
         "attention PWAL on the live layer (new _k_scale_float) but never rebuilds the prepared MLA: stale. "
         "Reading 3 (host scalars from checkpoint scales). Audit reader correct (also :226 stock_decode)."),
    37: ("TP", "vllm/models/step5/nvidia/mega_moe.py:438", True, True, True,
         "Host float from w2_input_scale[0].item(), passed to the nvfp4_mega_moe kernel (captured). Layerwise "
         "reload raises in Step5MegaMoEExperts.weight_loader ('Reloading transformed MegaMoE weights is "
         "unsupported', self.ready) and prepare_weights returns early when ready. A kernel-format reload copies into "
         "w2_input_scale (still a registered parameter) through get_parameter_for_reload, bypassing that guard, "
         "and neither l2_activation_scale nor the l2_alpha buffer is recomputed: stale. TP by reading 3 through "
         "the kernel-format path only; close call because the model declares reload unsupported. Audit reader is "
         "the kernel kwarg; correct."),
    38: ("TP", "vllm/v1/attention/backends/mla/flashinfer_mla.py:443", True, False, False,
         "Lazy Python float (None only in __init__, line 305; never reset) from layer._k_scale_float, a checkpoint "
         "KV scale. Layerwise reload reruns the attention/kv-cache PWAL and updates _k_scale_float, but "
         "bmm2_scale keeps the first value, and capture bakes it. Reading 3 (lazy host scalar). Audit reader correct."),
    39: ("TP", "vllm/v1/attention/backends/mla/flashinfer_mla_sparse.py:648", True, False, False,
         "Same pattern in FlashInferMLASparseImpl._prepare_mqa_kernel: bmm1_scale set once (None only in __init__, "
         "line 496) from scale*_q_scale_float*_k_scale_float and passed to trtllm_batch_decode_with_kv_cache_mla; "
         "a reload of the q/k scales updates the layer floats but not this cache, and capture bakes it. Reading 3. "
         "Audit reader correct."),
}


def line_text(path: str, line: int) -> str:
    with open(os.path.join(ROOT, path)) as f:
        return f.read().split("\n")[line - 1].strip()


def main() -> int:
    draw = json.load(open(DRAW))["sample"]
    items = []
    for index in range(27, 40):
        d = draw[index]
        judgement, reader, wd, kfc, close, why = V[index]
        path, line = reader.rsplit(":", 1)
        text = line_text(path, int(line))
        items.append(
            {
                "index": index,
                "file": d["file"],
                "line": d["line"],
                "attr": d["attr"],
                "category": d["category"],
                "severity": d["severity"],
                "audit_reader": d["reader"],
                "judgement": judgement,
                "reader": f"{reader}: {text}",
                "weight_derived": wd,
                "why": why,
                "close_call": close,
                "kernel_format_clause_only": kfc,
                "reader_quote": f"{reader} {text}",
            }
        )
        # the store line must be where the draw says
        store = line_text(d["file"], d["line"])
        assert d["attr"] in store, (index, store)
    with open(OUT, "w") as f:
        json.dump({"judge": "c", "items": items}, f, indent=1)
        f.write("\n")
    tp = sum(i["judgement"] == "TP" for i in items)
    print(f"{len(items)} items: TP {tp}, FP {len(items) - tp}")
    for i in items:
        print(i["index"], i["judgement"], "close" if i["close_call"] else "-", i["reader_quote"])
    return 0


if __name__ == "__main__":
    sys.exit(main())
