"""Write tests/resources/static_precision_outside12_judged_b.json (review23b).

Verdicts and reasons are this judge's own reading of vLLM 0.33.0's source; the
reader lines are read from the installed files here, so their text matches.

Run from the worktree root: python3 benchmarks/results/review23b/make_judged.py
"""

import json
import os
from pathlib import Path

import vllm

VLLM_ROOT = Path(os.path.dirname(vllm.__file__)).parent
DRAW = Path("tests/resources/static_precision_outside12_draw.json")
OUT = Path("tests/resources/static_precision_outside12_judged_b.json")
COPIED = ("file", "line", "attr", "category", "severity")

# index -> (judgement, reader "path:line", weight_derived, close_call,
#           kernel_format_clause_only, audit_reader_verdict, derives_from_right, why)
VERDICTS = {
    20: (
        "TP",
        "vllm/models/flint/ops/linear.py:79",
        True,
        False,
        True,
        "right",
        True,
        "FlintNvFp4LinearKernel.process_weights_after_loading (quant-method/kernel PWAL) "
        "sets layer.flint_weight_scale, a plain attribute, to a uint8 set_() view of "
        "layer.weight_scale's storage. In a layerwise reload this PWAL runs on the "
        "materialized temporaries, so the attribute ends up aliasing the temporary "
        "weight_scale while _copy_and_restore_kernel_tensors refills and re-registers the "
        "kept parameter (graphs, captured on the first-load alias of the kept storage, "
        "stay right). Eager then reads the temporary in nvfp4_gemv (line 79) and "
        "_dequant_gemm; a kernel-format reload after it refills only the kept weight_scale, "
        "so the eager reader goes stale. probes.out [B]: after layerwise "
        "alias_storage_is_kept=False; after kernel-format alias_stale=True (kept byte 72, "
        "alias 64), using vLLM's own _swizzled_scale_buffer. TP only under the "
        "kernel-format clause (temporary-aliasing reading). Audit reader and derives_from "
        "right.",
    ),
    21: (
        "TP",
        "vllm/models/inkling/amd/moe.py:340",
        True,
        False,
        False,
        "right",
        True,
        "InklingSinkExperts (non-LoRA) params have no weight_loader; _load_inkling_weights "
        "routes shared_experts.* to InklingMoE.load_expert_weight -> "
        "sink_experts.load_weight, which writes self.w13_weight.data.copy_(...) directly. "
        "After initialize_layerwise_reload the attribute is the meta placeholder: the copy "
        "lands on meta, the wrapped loader is never called, load_numel stays 0, and "
        "finalize logs 'Failed to load weights' and places the kept tensor back with the "
        "old values. forward (line 340) then multiplies with the stale sink weights. "
        "probes.out [A]: w13_equals_ckpt0=True, w13_equals_ckpt1=False, same storage, "
        "warning 'Sink: Failed to load weights' in probes.err. Stale under plain "
        "layerwise reload_weights.",
    ),
    22: (
        "TP",
        "vllm/models/inkling/amd/moe.py:344",
        True,
        False,
        False,
        "right",
        True,
        "Same loader bypass as index 21 for w2_weight: load_weight writes "
        "self.w2_weight.data[:, start:start + shard].copy_(...) into the meta placeholder "
        "during a layerwise reload; nothing is counted, finalize restores the kept w2_weight "
        "with its old values, and forward's h @ self.w2_weight.T (line 344) reads them. "
        "probes.out [A] w2_equals_ckpt1=False.",
    ),
    23: (
        "TP",
        "vllm/models/inkling/nvidia/moe.py:341",
        True,
        False,
        False,
        "right",
        True,
        "nvidia copy of the amd InklingSinkExperts (identical load_weight / forward; "
        "InklingMoE.load_expert_weight at nvidia/moe.py:556 routes the sink tensors to it, "
        "model.py:688 calls that). Layerwise reload writes w2_weight into the meta "
        "placeholder, counts nothing, finalize restores the old kept tensor; forward line "
        "341 reads it stale. probes.out [A].",
    ),
    24: (
        "TP",
        "vllm/models/kimi_k3/nvidia/specialized_decode/cutedsl/gemm/projection.py:105",
        True,
        False,
        False,
        "right",
        True,
        "PreparedProjection.weight is the `down` PreparedDenseMLP hands in: at TP16 (a "
        "supported specialized-decode TP; runtime/__init__.py allows 8/16) the hidden 2112 "
        "is padded to 2176, so `down` = F.pad(mlp.down_proj.weight.detach(), ...), a new "
        "copy; weight_view and the TMA map (extra) are built from it. SpecializedDecode is "
        "built once by KimiK3ModelState.__init__ (build_specialized_decode) and never "
        "rebuilt: reload_weights (v1/worker/gpu/model_runner.py:586) only reruns the "
        "layerwise loader, which refills the kept down_proj.weight but not the padded copy, "
        "so the decode graph's kernel call (line 105) reads stale down weights. At TP8 "
        "(no padding) `down` is the kept param itself and is refilled (FP for that "
        "configuration). probes.out [F] shows the same load-once pattern staying stale.",
    ),
    25: (
        "TP",
        "vllm/models/kimi_k3/nvidia/specialized_decode/cutedsl/mla/prepared.py:252",
        True,
        True,
        False,
        "weak",
        False,
        "PreparedMla.weights (built once with SpecializedDecode) is line 153's references "
        "(norm weights, q_b_proj.weight, W_UK_T) plus, at line 154, W_UV, "
        "attention._q_scale_inv and attention._k_scale_inv; self.views wraps them and "
        "run() passes qinv/kinv/qb/uk to the MlaQuery kernel (mq(*q_args, s), line 252; "
        "uv to v at 254). Kimi K3's MLA PWAL (kimi_k3/nvidia/mla.py:475-480) runs on the "
        "live deferred-attention layer on every reload and register_buffer()s NEW "
        "_q_scale_inv/_k_scale_inv objects, so the container keeps the old buffers with "
        "the old reciprocal scales (stale when the checkpoint's q/k scales change). "
        "probes.out [C]: prepared_q_scale_inv=0.5 vs layer 0.25, "
        "prepared_is_layer_buffer=False. The line-153 members themselves are kept params "
        "refilled in place (replace_parameter copies W_UK_T/W_UV in place), so the "
        "audit's derives_from (q_b_proj.weight) names a member that is not stale. Close "
        "call: the stale members come from line 154's += on the same attribute. The "
        "audit's reader (line 176, prepare_cache) only takes layout() (shape/stride/dtype) "
        "for compiling: weak.",
    ),
    26: (
        "TP",
        "vllm/models/kimi_k3/nvidia/specialized_decode/cutedsl/mla/prepared.py:223",
        True,
        False,
        False,
        "right",
        True,
        "stock_scales = (attention.scale * _q_scale_float * _k_scale_float, "
        "_k_scale_float): Python floats from the checkpoint KV scales, taken once when "
        "SpecializedDecode is built; a layerwise reload updates the layer's *_scale_float "
        "(attention scale reload) but never this tuple, and the FULL decode graph bakes "
        "them in. Passed to trtllm_decode (line 223, bmm1/bmm2_scale) or stock_decode "
        "(226). Host-scalar reading: TP.",
    ),
    27: (
        "TP",
        "vllm/models/muse_spark/nvidia/mega_moe.py:361",
        True,
        False,
        False,
        "right",
        True,
        "finalize_weights computes _norm_gamma = (post_expert_norm.weight.float() + "
        "gain_center).contiguous(), a new fp32 tensor. It is called from "
        "MuseSpark load_weights (model.py:1923 -> finalize_mega_moe_weights) on every "
        "reload but returns at once because _transformed_l1 is already set, so the copy is "
        "never refreshed while the norm weight (a kept param) is refilled. fp4_fp4_mega_moe "
        "(line 361; bf16 path line 356) reads the stale gamma. probes.out [F]: "
        "norm_gamma=1.5 vs weight 0.25 -> stale=True.",
    ),
    28: (
        "TP",
        "vllm/models/step5/nvidia/mega_moe.py:438",
        True,
        True,
        True,
        "right",
        True,
        "l2_activation_scale = self.w2_input_scale[0].item() in prepare_weights, guarded "
        "by self.ready (set once). A layerwise reload raises: the MegaMoE weight_loader "
        "raises 'Reloading transformed MegaMoE weights is unsupported' once ready "
        "(probes.out [E] raised=True), so that path never goes stale. A kernel-format "
        "reload (is_checkpoint_format=False) copies into the kept w2_input_scale without "
        "any processing and leaves the host scalar (and l2_alpha) old: probes.out [E] "
        "param=0.25, host_scalar=0.5. The kernel kwargs at line 438 hand it to "
        "nvfp4_mega_moe. TP only through the kernel-format clause, and a close call "
        "because the layerwise path fails loudly.",
    ),
    29: (
        "TP",
        "vllm/v1/attention/backends/b12x.py:1073",
        True,
        True,
        True,
        "right",
        True,
        "With bf16 sinks (make_attention_sink uses the model dtype, e.g. gpt-oss), "
        "self.sinks is an fp32 copy of _sinks_source (the owner's sinks Parameter). A "
        "layerwise reload refills the kept sinks param and the deferred attention PWAL "
        "then copy_()s into the existing fp32 tensor: in place and current (probes.out "
        "[D] after layerwise sinks32=0.25=source, same object). A kernel-format reload "
        "after it refills the sinks param only, leaving the fp32 copy stale (probes.out "
        "[D] sinks32=0.25 vs source 0.125). plan.bind(attention_sink_bias=self.sinks) at "
        "line 1073 reads it. TP only through the kernel-format clause (the copy-of-a-source "
        "case the rule names); close call since this is vLLM's refill precedent and "
        "layerwise keeps it right. With fp32 sinks it aliases the source (FP there).",
    ),
    30: (
        "TP",
        "vllm/v1/attention/backends/flashinfer.py:2551",
        True,
        False,
        False,
        "right",
        True,
        "Lazy host scalar: bmm1_scale = scale * _q_scale_float * _k_scale_float on the "
        "first forward with a quantized KV cache, never reset (only set to None in "
        "__init__). A layerwise reload with new KV scales updates the layer floats but not "
        "the cached float, which TRTLLM prefill (2551) and decode (2773) get and graphs "
        "bake in. Host-scalar reading: TP.",
    ),
    31: (
        "TP",
        "vllm/v1/attention/backends/flashinfer.py:2552",
        True,
        False,
        False,
        "right",
        True,
        "Lazy host scalar bmm2_scale = 1.0 * _v_scale_float (then / _o_scale_float on the "
        "fused-output path), never reset; a reload with new v scales leaves it old for "
        "trtllm_batch_context_with_kv_cache (2552) and decode (2774). Host-scalar "
        "reading: TP.",
    ),
    32: (
        "TP",
        "vllm/v1/attention/backends/mla/flashinfer_mla.py:442",
        True,
        False,
        False,
        "right",
        True,
        "FlashInferMLAImpl lazy bmm1_scale (scale * _q_scale_float * _k_scale_float), set "
        "once behind `is None` in forward_mqa and never reset; "
        "trtllm_batch_decode_with_kv_cache_mla reads it at 442. Host-scalar reading: TP.",
    ),
    33: (
        "TP",
        "vllm/v1/attention/backends/mla/flashinfer_mla.py:443",
        True,
        False,
        False,
        "right",
        True,
        "Lazy bmm2_scale = _k_scale_float (MLA uses the k scale for the latent V), set "
        "once, never reset; passed at 443. Host-scalar reading: TP.",
    ),
    34: (
        "TP",
        "vllm/v1/attention/backends/mla/flashinfer_mla_sparse.py:649",
        True,
        False,
        False,
        "right",
        True,
        "FlashInferMLASparseImpl._prepare_mqa_kernel sets bmm2_scale = _k_scale_float once "
        "(`is None` guard, only None in __init__); _forward_mqa_kernel passes it to "
        "trtllm_batch_decode_with_kv_cache_mla at 649. Host-scalar reading: TP.",
    ),
    35: (
        "TP",
        "vllm/v1/attention/backends/rocm_aiter_fa.py:1579",
        True,
        False,
        False,
        "right",
        True,
        "The metadata builder's v_scale dict (fp8 shuffle KV cache) maps each layer to a "
        "dense torch.full table of layer._v_scale_float, built once "
        "(_build_asm_kv_scale_tables returns when self.k_scale is set) and handed to every "
        "AiterFlashAttentionMetadata. A reload with new KV scales updates "
        "_v_scale_float, but the tables are never rebuilt; forward reads "
        "attn_metadata.v_scale[layer.layer_name] (1579) and passes it as V_QScale_asm to "
        "paged_attention_common (1594).",
    ),
    36: (
        "TP",
        "vllm/v1/spec_decode/llm_base_proposer.py:926",
        True,
        True,
        False,
        "right",
        True,
        "parallel_drafting_hidden_state_tensor is filled once in load_model with "
        "combine_hidden_states(mask_hidden) (EAGLE3 aux: the fc projection) or mask_hidden. "
        "A draft weight update (start_draft_weight_update: nccl/ipc engines run "
        "initialize/finalize_layerwise_reload on the drafter) refills fc in place but never "
        "recomputes the copy, so torch.where at line 926 feeds stale mask hidden states. "
        "(mask_hidden itself, a non-persistent buffer copied directly in "
        "llama_eagle3.load_weights, is not refreshed by layerwise reload either.) Close "
        "call: the reload path is the drafter's layerwise weight update, not the target's "
        "reload_weights.",
    ),
    37: (
        "TP",
        "vllm/v1/worker/gpu/spec_decode/dspark/speculator.py:133",
        True,
        True,
        False,
        "right",
        True,
        "_d2t_scatter_index = arange + draft_id_to_target_id, computed once in "
        "load_draft_model. DSparkSpeculator is a DraftModelSpeculator, so "
        "get_draft_model returns it and a draft weight update reloads d2t (a Parameter with "
        "the default loader) layerwise in place; the scatter index is not recomputed, so "
        "index_copy_ at 133 scatters probabilistic-draft logits with the old map while "
        "map_draft_to_target reads the new d2t. Close call: only via the drafter's layerwise "
        "weight update, and only if a reload changes d2t.",
    ),
    38: (
        "TP",
        "vllm/v1/attention/backends/triton_attn.py:678",
        True,
        False,
        False,
        "right",
        True,
        "_copy_target_kv_scales (gemma4 speculator) sets the draft attention's _k_scale to "
        "a detached clone of the target's (a new Parameter if the draft had one), once at "
        "load_draft_model. A target reload_weights with new calibrated FP8 KV scales "
        "refills the target's _k_scale in place; the draft clone keeps the old value while "
        "the draft reads the target's (re-quantized) shared cache with "
        "layer._k_scale.expand (678, TRITON_ATTN forced for Gemma4). probes.out [G] using "
        "the real helper: target_k=0.25, draft_k=0.5.",
    ),
    39: (
        "TP",
        "vllm/v1/attention/backends/triton_attn.py:679",
        True,
        False,
        False,
        "right",
        True,
        "As index 38 for _v_scale: a separate clone of the target's _v_scale, stale after a "
        "target reload (probes.out [G]: target_v=0.125, draft_v=0.75), read by "
        "layer._v_scale.expand at 679. The audit's 'alias' reason is wrong: `scale` is "
        "rebound per loop iteration, so _v_scale is not the same object as _k_scale "
        "(probes.out [G] draft_v_is_draft_k=False); derives_from is right.",
    ),
}


def quote(ref: str) -> str:
    path, line = ref.rsplit(":", 1)
    text = (VLLM_ROOT / path).read_text().splitlines()[int(line) - 1].strip()
    return f"{path}:{line}: {text}"


def main() -> None:
    sample = json.loads(DRAW.read_text())["sample"]
    rows = []
    for index in range(20, 40):
        draw = sample[index]
        judgement, ref, wd, close, kfc, arv, dfr, why = VERDICTS[index]
        reader = quote(ref)
        row = {"index": index}
        row.update({k: draw[k] for k in COPIED})
        row.update(
            audit_reader=draw["reader"],
            judgement=judgement,
            reader=reader,
            weight_derived=wd,
            why=why,
            close_call=close,
            kernel_format_clause_only=kfc,
            reader_quote=reader,
            audit_reader_verdict=arv,
            derives_from_right=dfr,
        )
        rows.append(row)
    OUT.write_text(json.dumps(rows, indent=1) + "\n")
    tp = sum(r["judgement"] == "TP" for r in rows)
    print(f"{len(rows)} judged: {tp} TP, {len(rows) - tp} FP")
    for r in rows:
        print(r["index"], r["judgement"], r["audit_reader_verdict"], r["reader"])


if __name__ == "__main__":
    main()
