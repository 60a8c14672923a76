"""Write tests/resources/static_precision_outside9_judged_c.json (judge C, positions 27-39).

Reader quotes are read from the installed vLLM source, so they are exact.
Run: PYTHONPATH=$PWD python3 benchmarks/results/review16c/make_judged.py
"""

import json
import os

import vllm

ROOT = os.path.dirname(os.path.dirname(vllm.__file__))
DRAW = "tests/resources/static_precision_outside9_draw.json"
OUT = "tests/resources/static_precision_outside9_judged_c.json"
TOY = "benchmarks/results/review16c/toy_reload_patterns.py (output: toy_reload_patterns.out)"

# index -> (reader path, reader line, judgement, weight_derived, kernel_format_clause_only,
#           close_call, why)
V = {
    27: (
        "vllm/models/deepseek_v4/nvidia/model.py",
        742,
        "TP",
        True,
        True,
        True,
        "Stored at model.py:1221 by DeepseekV4Model.finalize_mhc_broadcast_weights as a "
        "plain tensor attribute (sum over hc_mult of the hc_attn_fn Parameter); the "
        "decode path of DeepseekV4DecoderLayer.forward passes it to "
        "mhc_pre_broadcast_tilelang (captured under CUDA graphs). Layerwise "
        "reload_weights: the decoder layer's own hc_* Parameters are all loaded, so the "
        "layer is processed and hc_attn_fn refilled in place inside load_weights, and "
        "DeepseekV4ForCausalLM.load_weights then calls process_weights_after_loading -> "
        "finalize_mhc_broadcast_weights, which copy_()s the new sum into the kept tensor: "
        "fresh, same storage (toy A). A kernel-format reload after it "
        "(get_parameter_for_reload('...hc_attn_fn').copy_) refills hc_attn_fn but reruns "
        "nothing, so the broadcast stays stale (toy A). TP only through the kernel-format "
        "clause. Evidence: audit reader is right; derives_from None is wrong, the value "
        "derives from the checkpoint weight layer.hc_attn_fn. " + TOY,
    ),
    28: (
        "vllm/models/kimi_k3/nvidia/dspark_mla.py",
        286,
        "TP",
        True,
        False,
        False,
        "torch.stack of every draft layer's kv_a_layernorm.weight, built in "
        "K3DSparkModel._build_fused_context_kv_metadata, called by the drafter's "
        "model-level process_weights_after_loading (initial load only) or lazily behind "
        "`if not hasattr(self, '_num_context_layers')` (once). A layerwise drafter reload "
        "(start_draft_weight_update -> initialize/finalize_layerwise_reload) refills each "
        "kv_a_layernorm.weight in place but neither path rebuilds the stack, so "
        "ops.rms_norm in _precompute_fused_context_kv reads the old norm weights (toy B: "
        "stack of child weights built by a model-level PWAL is STALE after layerwise). "
        "Audit reader and weight correct. " + TOY,
    ),
    29: (
        "vllm/models/kimi_k3/nvidia/specialized_decode/cutedsl/mla/prepared.py",
        223,
        "TP",
        True,
        False,
        True,
        "stock_scales = (attention.scale * _q_scale_float * _k_scale_float, "
        "_k_scale_float): Python host floats taken once in PreparedMla.__init__, built by "
        "SpecializedDecode when KimiK3ModelState is constructed after loading; nothing "
        "rebuilds it on reload. A layerwise reload that carries the q/k KV-cache scales "
        "reruns the attention layer's PWAL on the live layer and updates "
        "_q_scale_float/_k_scale_float, but stock_scales keeps the old floats and "
        "trtllm_decode passes them as bmm1_scale/bmm2_scale (also stock_decode at "
        "prepared.py:226). TP by the 'Python host scalars from checkpoint scales' "
        "reading. Close call: stale only when the checkpoint carries q/k scales that "
        "change (without them both are 1.0). Evidence: the 'container of tensors' reason "
        "is imprecise, the items are host floats; reader correct.",
    ),
    30: (
        "vllm/model_executor/layers/fused_moe/experts/marlin_moe.py",
        770,
        "TP",
        True,
        True,
        True,
        "Line 711 is the Hopper Marlin branch (_process_hopper_marlin_weights): "
        "make_nvfp4_moe_quant_config(backend=MARLIN) -> nvfp4_w4a16_moe_quant_config "
        "whose w1_scale/w2_scale/g1_alphas/g2_alphas are the converted tensors that "
        "replace_parameter also installs on the layer (fp8 -> bf16 marlin scales, so "
        ".data is rebound and the config aliases the layer Parameter at startup). The "
        "experts built from it are MarlinExperts, whose apply passes "
        "w1_scale=self.w1_scale (quant_config) to fused_marlin_moe. Layerwise: this "
        "quant-method PWAL reruns on the reload temporaries, so the new config points "
        "at the temporaries (values right, storage moved); the startup config still "
        "aliases the kept Parameters, refilled in place. A kernel-format reload after it "
        "refills only the kept Parameters and the eager path reads the temporaries: "
        "stale (toy D reproduces all three states). TP under the 'references built "
        "inside quant-method PWAL' reading, kernel-format clause only. Evidence error: "
        "the audit reader is MuseSparkTrtLlmNvFp4Experts.apply_routed (TRT-LLM path, "
        "whose config is built at line 660, not 711); the experts reading this config "
        "are MarlinExperts. " + TOY,
    ),
    31: (
        "vllm/v1/attention/backends/b12x.py",
        1073,
        "TP",
        True,
        True,
        False,
        "Line 852 is the branch where the sink Parameter is not fp32 (make_attention_sink "
        "uses the model dtype, e.g. bf16): self.sinks becomes an fp32 copy. Layerwise: the "
        "sink Parameter is refilled in place and the deferred attention PWAL reruns "
        "B12xPagedAttentionImpl.process_weights_after_loading on the live layer, which "
        "copy_()s into the existing fp32 sinks: fresh. A kernel-format reload after it "
        "refills the sink Parameter only, so the fp32 copy read by forward "
        "(plan.bind(... attention_sink_bias=self.sinks) at b12x.py:1073) is stale. TP "
        "through the kernel-format clause only. Evidence error: the audit reader "
        "b12x.py:811 is _compile_paged_extend_entry (compile/warm-up binding), not the "
        "serving read; the forward read is b12x.py:1073.",
    ),
    32: (
        "vllm/v1/attention/backends/flashinfer.py",
        2552,
        "TP",
        True,
        False,
        False,
        "Lazy Python float: bmm2_scale = 1.0 * layer._v_scale_float, built once behind "
        "`if self.bmm2_scale is None`; FlashInferImpl never resets it (only __init__ sets "
        "None). A reload that carries v_scale updates layer._v_scale_float in the "
        "attention PWAL, but the cached float (and what graph capture baked in) stays "
        "old; passed to trtllm_batch_context_with_kv_cache (also 2708, 2774). TP by the "
        "host-scalar reading. Audit reader correct.",
    ),
    33: (
        "vllm/v1/attention/backends/mla/flashinfer_mla.py",
        442,
        "TP",
        True,
        False,
        False,
        "Lazy Python float bmm1_scale = scale * _q_scale_float * _k_scale_float behind "
        "`if self.bmm1_scale is None`, never reset; a reload that carries q/k scales "
        "updates the layer floats but not this cache. Passed to "
        "trtllm_batch_decode_with_kv_cache_mla. TP by the host-scalar reading. Audit "
        "reader correct.",
    ),
    34: (
        "vllm/v1/attention/backends/mla/flashinfer_mla_sparse.py",
        648,
        "TP",
        True,
        False,
        False,
        "Lazy Python float bmm1_scale (scale * _q_scale_float * _k_scale_float) set once in "
        "the prepare step behind `if self.bmm1_scale is None`, never reset; read by "
        "_forward_mqa_kernel. TP by the host-scalar reading. Audit reader correct.",
    ),
    35: (
        "vllm/v1/attention/backends/mla/flashinfer_mla_sparse.py",
        649,
        "TP",
        True,
        False,
        False,
        "Lazy Python float bmm2_scale = _k_scale_float, set once behind "
        "`if self.bmm2_scale is None`, never reset; read by _forward_mqa_kernel. TP by "
        "the host-scalar reading. Audit reader correct.",
    ),
    36: (
        "vllm/v1/attention/backends/mla/tokenspeed_mla.py",
        341,
        "TP",
        True,
        False,
        False,
        "Lazy Python float softmax_scale = scale * _q_scale_float * _k_scale_float behind "
        "`if self.softmax_scale is None` (FP8 KV cache is mandatory here, so the scales "
        "always apply), never reset; passed to tokenspeed_mla_decode. TP by the "
        "host-scalar reading. Evidence error: the reason says 'stores a new tensor: "
        "arithmetic over tensors'; it is a host float. Reader correct.",
    ),
    37: (
        "vllm/v1/spec_decode/llm_base_proposer.py",
        926,
        "TP",
        True,
        False,
        True,
        "Allocated at 382, filled once in load_model with mask_hidden (non-aux drafters) "
        "or combine_hidden_states(mask_hidden), i.e. the drafter's fc projection, for "
        "EAGLE3 heads with aux hidden states (the default). A drafter reload "
        "(start_draft_weight_update, layerwise) refills fc.weight in place but never "
        "reruns load_model, so torch.where in set_inputs_first_pass reads the old "
        "projection: stale (toy C). Close call: for non-aux drafters the copy equals the "
        "kept mask_hidden, because layerwise reload itself drops a new mask_hidden (a "
        "non-persistent buffer written by a direct copy_ in load_weights, skipped at "
        "copy-back: toy C shows it stays old), so there TP rests on the fc path only. "
        "Evidence: reader correct; derives_from names only mask_hidden, the fc weight is "
        "the reloadable source. " + TOY,
    ),
    38: (
        "vllm/v1/worker/gpu/spec_decode/dspark/speculator.py",
        133,
        "TP",
        True,
        False,
        True,
        "_d2t_scatter_index = arange + model.draft_id_to_target_id, computed once in "
        "load_draft_model. draft_id_to_target_id is a checkpoint Parameter (qwen3_dspark "
        "'d2t'); a layerwise drafter reload (DSparkSpeculator is a DraftModelSpeculator, "
        "so start_draft_weight_update targets it) or a kernel-format reload refills it in "
        "place, while the scatter index used by buf.index_copy_ in _sample_logits stays "
        "old (the greedy path reads the live map via map_draft_to_target, so the two "
        "diverge). Close call: the source is a vocab index map, not a trained weight; it "
        "changes only when the reloaded draft checkpoint remaps its vocabulary. Audit "
        "reader correct.",
    ),
    39: (
        "vllm/v1/attention/backends/triton_attn.py",
        678,
        "TP",
        True,
        False,
        True,
        "_copy_target_kv_scales stores a detached clone of the target layer's _k_scale on "
        "the Gemma4 MTP draft attention layer (deliberately not an alias), once at "
        "load_draft_model. The draft is Q-only and reads the target's KV cache. A target "
        "reload_weights that carries k_scale refills the target's _k_scale in place "
        "(_reload_attention_scales + attention PWAL on the live layer); nothing refreshes "
        "the draft clone (reset_lora_state only refreshes quantized lm heads), so the "
        "draft dequantizes the target-written FP8 cache with the old scale. Gemma4 forces "
        "TRITON_ATTN, whose forward reads k_descale = layer._k_scale.expand(...). Close "
        "call: needs an FP8 KV cache with checkpoint k scales. Evidence error: the audit "
        "reader mla_attention.py:864 (MLAAttention.forward) is not on this path; Gemma4 "
        "MTP uses Attention with the Triton backend.",
    ),
}


def main() -> None:
    sample = json.load(open(DRAW))["sample"]
    items = []
    for idx in range(27, 40):
        d = sample[idx]
        path, line, verdict, wd, kfc, close, why = V[idx]
        text = open(os.path.join(ROOT, path)).read().splitlines()[line - 1].strip()
        items.append(
            {
                "index": idx,
                "file": d["file"],
                "line": d["line"],
                "attr": d["attr"],
                "category": d["category"],
                "severity": d["severity"],
                "audit_reader": d["reader"],
                "judgement": verdict,
                "reader": f"{path}:{line}: {text}",
                "weight_derived": wd,
                "why": why,
                "close_call": close,
                "kernel_format_clause_only": kfc,
                "reader_quote": f"{path}:{line} {text}",
            }
        )
    with open(OUT, "w") as f:
        json.dump({"judge": "c", "items": items}, f, indent=1)
        f.write("\n")
    for it in items:
        print(it["index"], it["judgement"], it["reader_quote"])


if __name__ == "__main__":
    main()
