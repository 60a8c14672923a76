"""Write tests/resources/static_precision_outside11_judged_c.json (judge C, positions 27-39).

Verdicts and reasons are this judge's own reading of vLLM 0.33.0 (and of the probes in
this folder); the reader lines are read from the installed vLLM source so the quoted
text matches it exactly.

Run from the worktree root: python3 benchmarks/results/review22c/make_judged.py
"""

import json
import os
import sys

import vllm

DRAW = "tests/resources/static_precision_outside11_draw.json"
OUT = "tests/resources/static_precision_outside11_judged_c.json"
POSITIONS = range(27, 40)
VLLM_ROOT = os.path.dirname(vllm.__file__)

# index -> (judgement, reader path under vllm/, reader line, weight_derived, close_call,
#           kernel_format_clause_only, audit_reader_verdict, derives_from_right, why)
V = {
    27: (
        "TP",
        "model_executor/layers/utils.py",
        679,
        True,
        True,
        False,
        "right",
        True,
        "CPU only. Line 650 is the oneDNN branch of dispatch_cpu_unquantized_gemm; the "
        "lambda closes over a handler whose constructor reorders (copies) the weight into "
        "handler-owned packed memory (csrc/cpu/dnnl_helper.cpp prepack_weight, read in the "
        "public vLLM source, not in the wheel). Linear layers call it with "
        "remove_weight=True (weight emptied, so a kernel-format reload raises: FP shape), "
        "but UnquantizedEmbeddingMethod.process_weights_after_loading calls it with "
        "remove_weight=False: the CPU lm_head (>1 MiB, so not the SGL branch) keeps its "
        "weight Parameter and serves logits through layer.cpu_linear (utils.py:679, via "
        "LogitsProcessor -> quant_method.apply -> cpu_unquantized_gemm). Probe "
        "probe_cpu_onednn_lm_head.out (vLLM's own PWAL, dispatch and reload functions; only "
        "the missing _C op replaced by a copying stand-in): untied head, layerwise reload "
        "is fresh (handler rebuilt, reread per call) but a kernel-format reload refills "
        "lm_head.weight and logits keep the old weights (max err 113.5 vs new, 0.0 vs old); "
        "tied head (tie_weights, checkpoint without lm_head.weight), even the layerwise "
        "reload leaves logits on the first-load weights (lm_head has nothing to load, "
        "PWAL never reruns). Stale, so TP. Close call: sibling oneDNN/SGL/zentorch sites "
        "were judged FP before on 'Linear empties the weight', which misses the lm_head "
        "path. Audit reader and derives_from (layer.weight) are right.",
    ),
    28: (
        "TP",
        "model_executor/models/gemma4_mtp.py",
        576,
        False,
        False,
        False,
        "right",
        True,
        "Gemma4MTP.load_weights rebinds self._suppress_idx to a new torch.tensor on every "
        "load, so a drafter layerwise reload (start_draft_weight_update -> "
        "initialize_layerwise_reload(draft) -> draft.load_weights) allocates a new tensor "
        "before dropping the old one. The V2 speculator (TargetDependentARSpeculator."
        "capture, Gemma4Speculator) records _prefill = forward + compute_logits + sample "
        "as one FULL CUDA graph (the store's own comment says compute_logits runs under "
        "graph capture), so the graph keeps reading the freed old index tensor. Derived "
        "from config token ids, never stale, but it moves storage a captured path reads: "
        "TP by the rule (severity not judged). Reader is the index_fill_ line; "
        "derives_from null is right.",
    ),
    29: (
        "TP",
        "model_executor/models/qwen3_xpress.py",
        156,
        True,
        False,
        False,
        "right",
        True,
        "Qwen3XPressForCausalLM.load_weights ends with fold_from_raw_ and "
        "build_fused_buffers, which rebind _fused_buf to a new dict of new .contiguous() "
        "copies; XPressSpeculator._generate_draft (-> _jacobi_refine -> "
        "jacobi_refine_greedy) is captured by DFlashSpeculator.capture as a CUDA graph, so "
        "after a drafter layerwise reload the graph reads the freed old buffers. Probe "
        "probe_reload_patterns.out part C (real XPressRefinerHead): all seven buffers move, "
        "and because mix_L is skipped by the loader it is still meta when the buffers are "
        "rebuilt: mix_kjc is a meta tensor and mix_L itself is put back with first-load "
        "values ('Failed to load weights'), so eager is broken too. Reader (whc_t in the "
        "default top-C branch) and derives_from (in_proj.weight) are right.",
    ),
    30: (
        "TP",
        "models/beam/nvidia/dflash2.py",
        506,
        True,
        False,
        False,
        "right",
        True,
        "DFlash2BeamForCausalLM.load_weights calls build_context_kv_weights after every "
        "load, which rebinds _context_k_norm_weight to a new torch.stack(...).contiguous(). "
        "The value is read in _store_fused_context_kv -> store_context_kv, which "
        "DFlashSpeculator captures in its FULL graph through prepare_forward="
        "_prepare_graph_forward -> _precompute_context_kv (dflash/cudagraph.py:119). A "
        "drafter layerwise reload therefore frees the tensor the captured graph reads "
        "(values rebuilt fresh, storage moved): TP. Reader (argument of store_context_kv) "
        "and derives_from (k_norm.weight) are right.",
    ),
    31: (
        "TP",
        "models/deepseek_v4/amd/model.py",
        499,
        True,
        True,
        True,
        "right",
        False,
        "shared_w2_scale is registered as a None non-persistent buffer in __init__ and "
        "assigned shuffle_scale(...) of the shared expert's down_proj.weight_scale_inv in "
        "the quant method's PWAL (prepare_heterogeneous_shared_expert). Layerwise reload: "
        "restore_layer_on_meta deletes the buffer, the PWAL rerun on temporaries sets a "
        "plain attribute, and _place_kernel_tensors' register_buffer raises KeyError "
        "\"attribute 'shared_w1' already exists\" (probe_reload_patterns.out part A, same "
        "pattern on a toy: KeyError in both load orders) - a failure, not a stale value. "
        "A kernel-format reload refills the shared expert's kept down_proj params in place "
        "and never reruns PWAL, so the shuffled copy read by rocm_aiter_fused_experts "
        "(shared_w2_scale=, line 499, in the ROCm graph-captured forward) stays stale "
        "(probe part A: source 3.0, derived copy still 1.0). TP only through the "
        "kernel-format clause; close call because the layerwise path raises first, and "
        "the rule's 'kernel-format reload after it' is read here as any kernel-format "
        "reload. derives_from names the expression shuffle_scale(shared[3]) (a local), "
        "not the scale it comes from (shared_expert.down_proj.weight_scale_inv).",
    ),
    32: (
        "TP",
        "models/deepseek_v4/cpu/cpu_compressor.py",
        106,
        True,
        False,
        True,
        "right",
        True,
        "CPU only. cache_norm_weight_fp32 is called from DeepseekV4CPUAttention."
        "process_weights_after_loading, a deferred attention layer, so a layerwise reload "
        "reruns it at finalize on the refilled norm.weight and forward rereads "
        "self._norm_weight_fp32: fresh, FP on that path. A kernel-format reload refills "
        "compressor.norm.weight (bf16) in place without PWAL; _norm_weight_fp32 is an fp32 "
        "copy and stays stale, the same shape as the ZenCPU f32 scale copy the rule "
        "counts TP under the kernel-format clause. Reader (argument of the store_fn "
        "kernel call) and derives_from (norm.weight) are right.",
    ),
    33: (
        "TP",
        "models/inkling/amd/moe.py",
        340,
        True,
        False,
        False,
        "right",
        True,
        "InklingSinkExperts.load_weight writes self.w13_weight.data.copy_(weight) and never "
        "calls a weight_loader. Under a layerwise reload the param is a meta placeholder, "
        "the copy goes nowhere, load_numel stays 0, and finalize puts the kept tensor back "
        "with first-load values ('InklingSinkExperts: Failed to load weights'). Probe "
        "probe_reload_patterns.out part B (the real load_weight): w13 still 1.0 after "
        "reloading 2.0. The forward GEMM at line 340 reads the stale weight: TP. Reader "
        "and derives_from are right.",
    ),
    34: (
        "TP",
        "models/inkling/amd/moe.py",
        344,
        True,
        False,
        False,
        "right",
        True,
        "Same as position 33 for w2_weight: load_weight writes "
        "self.w2_weight.data[:, start:start + shard].copy_(...) into the meta placeholder "
        "during a layerwise reload, nothing is counted and the first-load tensor is put "
        "back (probe part B: w2 still 1.0 after reloading 2.0). The second GEMM "
        "(h @ self.w2_weight.T) reads it stale: TP. Reader and derives_from are right.",
    ),
    35: (
        "TP",
        "models/kimi_k3/nvidia/specialized_decode/cutedsl/kda/prepared.py",
        111,
        True,
        False,
        False,
        "right",
        True,
        "PreparedKda is built once, by KimiK3ModelState.__init__ -> "
        "build_specialized_decode -> SpecializedDecode.build_providers, after loading, "
        "and never rebuilt on reload. Its weights tuple holds conv_w = "
        "decode_conv_weight(conv1d.weight) (a transposed .contiguous() copy) and norm = "
        "o_norm.weight.detach().float() (a copy of the bf16 weight) next to references. "
        "A layerwise reload (or a kernel-format one) refills conv1d.weight and o_norm.weight "
        "in place, so the copies stay stale; run() unpacks them through _operands "
        "(line 75) and launches the KdaSplit kernel with them at line 111, inside the "
        "decode CUDA graphs. TP. The audit's line 75 is the unpack feeding that launch: "
        "right. derives_from (conv1d.weight) is right; o_norm.weight is a second source.",
    ),
    36: (
        "TP",
        "models/kimi_k3/nvidia/specialized_decode/cutedsl/mla/prepared.py",
        240,
        True,
        True,
        False,
        "weak",
        True,
        "PreparedMla is built once after loading (model state) and its weights tuple and "
        "the cute views made from it (self.views, read per step at line 240) keep "
        "references. Most are kept objects refilled in place: norms, q_b_proj.weight, and "
        "W_UK_T/W_UV, which the deferred attention PWAL rewrites through "
        "replace_parameter's in-place copy_ (same shape/stride). But _q_scale_inv and "
        "_k_scale_inv are non-persistent buffers that MultiHeadLatentAttention."
        "process_weights_after_loading re-registers as new tensors on every run; after a "
        "layerwise reload carrying new q/k scales the layer holds new buffers while the "
        "container still holds the old ones. Probe probe_deferred_attn_scale_inv.out (real "
        "BaseKVCacheMethod, replace_parameter and reload): W_UK_T reference live and "
        "updated, container q_inv 4.0 / k_inv 2.0 vs live 16.0 / 8.0. Stale when the "
        "checkpoint's fp8 KV scales change: TP, close call (with default 1.0 scales the "
        "values never change). The audit's line 176 only reads layouts "
        "(shape/stride/dtype) to compile kernels: weak. derives_from q_b_proj.weight is "
        "in the container but is not the stale part.",
    ),
    37: (
        "TP",
        "models/muse_spark/amd/muse_moe_runner.py",
        529,
        False,
        False,
        False,
        "weak",
        True,
        "_unit_weights_bufs lives on MuseSparkAiterExperts, which QuarkOCP_MX_MoEMethod."
        "_setup_kernel rebuilds (make_mxfp4_moe_kernel) on every PWAL; the runner reads "
        "quant_method.moe_kernel each call, so after a layerwise reload the old experts "
        "object and its fp32 ones buffers are freed while the ROCm CUDA graphs captured "
        "rocm_aiter_fused_experts(..., topk_weights=unit_topk_weights) with their address. "
        "Constant values, never stale, but it moves storage a captured path reads: TP by "
        "the rule. The audit's line 435 is the cache lookup in the _unit_weights accessor "
        "(it also checks shape/device to reallocate); the consumer is the aiter call in "
        "apply: weak. derives_from null is right.",
    ),
    38: (
        "TP",
        "v1/attention/backends/flashinfer.py",
        2773,
        True,
        False,
        False,
        "right",
        True,
        "Lazy host float: bmm1_scale is set once (when None) from layer._q_scale_float * "
        "layer._k_scale_float and nothing resets it (FlashInferImpl."
        "process_weights_after_loading only handles sinks). A reload with new checkpoint "
        "q/k scales updates the layer floats (BaseKVCacheMethod PWAL in "
        "_reload_attention_scales) but the impl keeps the old product, and captured "
        "graphs baked it in. TP (the rule's third reading). The audit's prefill TRT-LLM "
        "line 2551 and the decode line 2773 both consume it: right. derives_from right "
        "(also _k_scale_float).",
    ),
    39: (
        "TP",
        "v1/attention/backends/mla/flashinfer_mla_sparse.py",
        649,
        True,
        False,
        False,
        "right",
        True,
        "Lazy host float in _prepare_mqa_kernel: bmm2_scale is set once from "
        "layer._k_scale_float and never reset (no PWAL resets it); after a reload with a "
        "new k_scale the TRT-LLM sparse MLA decode call (line 649) passes the old value, "
        "also baked into captured graphs. TP (third reading). Reader and derives_from "
        "are right.",
    ),
}


def reader_line(rel: str, line: int) -> str:
    with open(os.path.join(VLLM_ROOT, rel), encoding="utf-8") as f:
        text = f.read().splitlines()[line - 1].strip()
    return f"vllm/{rel}:{line}: {text}"


def main() -> int:
    sample = json.load(open(DRAW))["sample"]
    out = []
    for i in POSITIONS:
        d = sample[i]
        (judgement, rel, line, wd, close, kfc, arv, dfr, why) = V[i]
        reader = reader_line(rel, line)
        out.append(
            {
                "index": i,
                "file": d["file"],
                "line": d["line"],
                "attr": d["attr"],
                "category": d["category"],
                "severity": d["severity"],
                "audit_reader": d["reader"],
                "judgement": judgement,
                "reader": reader,
                "weight_derived": wd,
                "why": why,
                "close_call": close,
                "kernel_format_clause_only": kfc,
                "reader_quote": reader,
                "audit_reader_verdict": arv,
                "derives_from_right": dfr,
            }
        )
    with open(OUT, "w") as f:
        json.dump(out, f, indent=1)
        f.write("\n")
    tp = sum(o["judgement"] == "TP" for o in out)
    print(f"{len(out)} judged: {tp} TP, {len(out) - tp} FP")
    for o in out:
        print(o["index"], o["judgement"], o["audit_reader_verdict"], o["reader"])
    return 0


if __name__ == "__main__":
    sys.exit(main())
