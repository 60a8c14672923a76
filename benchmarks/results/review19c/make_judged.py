"""Write tests/resources/static_precision_outside10_judged_c.json (judge C, positions 27-39).

The reader lines are read from the installed vLLM 0.33.0 source, so their text matches
it exactly; each is checked against the code fragment the verdict was written for.
Run from the worktree root: `python3 benchmarks/results/review19c/make_judged.py`.
"""

import json
import os
import sys
from pathlib import Path

import importlib.util

VLLM_ROOT = Path(importlib.util.find_spec("vllm").origin).parent.parent  # site-packages
DRAW = Path("tests/resources/static_precision_outside10_draw.json")
OUT = Path("tests/resources/static_precision_outside10_judged_c.json")
PROBES = "benchmarks/results/review19c/probes_output.txt"

# index -> (reader path from the vllm package root's parent, line, fragment, judgement,
#           weight_derived, close_call, kernel_format_clause_only, why)
J = {
    27: ("vllm/models/deepseek_v4/amd/model.py", 498, "shared_w1_scale=self.shared_w1_scale",
         "TP", True, True, True,
         "Store: prepare_heterogeneous_shared_expert (called by the quant-method PWAL "
         "DeepseekV4HeterogeneousMxfp4MoEMethod) sets the registered-None non-persistent buffer "
         "shared_w1_scale = shuffle_scale_a16w4 of the shared expert's gate_up_proj.weight_scale_inv. "
         "Reader: forward_modular passes it to rocm_aiter_fused_experts (audit reader correct). "
         "Layerwise reload: restore_layer_on_meta deletes the buffer (it was None at "
         "record_metadata time, so it is not re-registered); the rerun PWAL then sets a plain "
         "attribute and _place_kernel_tensors' register_buffer raises KeyError \"attribute "
         "'shared_w1_scale' already exists\" (probe 27/28 in " + PROBES + "): the layerwise reload "
         "fails, it does not go stale. A kernel-format reload (is_checkpoint_format=False) copies "
         "the new shared-expert scale into its param but cannot refresh the derived buffer (no PWAL, "
         "buffers unsupported): the probe shows the derived value stays old ([2.0] vs fresh [10.0]). "
         "TP only through a kernel-format reload (not after a successful layerwise one, since that "
         "raises), hence close call. Audit note: store kind 'layer-attribute' is really a registered "
         "non-persistent buffer; derives_from is right."),
    28: ("vllm/models/deepseek_v4/amd/model.py", 499, "shared_w2_scale=self.shared_w2_scale",
         "TP", True, True, True,
         "Same pattern as position 27: shared_w2_scale = shuffle_scale(down_proj.weight_scale_inv "
         "bytes) is a registered-None non-persistent buffer set in the quant-method PWAL. Layerwise "
         "reload raises KeyError at _place_kernel_tensors (probe 27/28); a kernel-format reload "
         "refills down_proj.weight_scale_inv but leaves this buffer stale; read by forward_modular's "
         "rocm_aiter_fused_experts call (audit reader correct). TP only via the kernel-format path; "
         "close call for the same reason as 27."),
    29: ("vllm/models/deepseek_v4/amd/rocm.py", 1393,
         "return self._bpre_attn_gemm(self.wo_b.weight, self._wo_b_scale, zf, True)",
         "TP", True, True, False,
         "Store: prepare_attn_preshuffle, called only from the model-level "
         "DeepseekV4...process_weights_after_loading (model.py:1599), which no reload reruns. "
         "_wo_b_scale is wo_b.weight_scale_inv itself when that param is fp32, or a fresh "
         "_upcast_e8m0_to_fp32 copy when it is float8_e8m0fnu. Reader: _o_proj feeds it to "
         "gemm_a8w8_blockscale_bpreshuffle (audit reader correct). Default ROCm config "
         "(VLLM_ROCM_USE_AITER_LINEAR=1): AiterFp8BlockScaledMMKernel.process_weights_after_loading "
         "already replaces an e8m0 scale by fp32 (scaled_mm/aiter.py:426-427), so _wo_b_scale is the "
         "kept param, refilled in place by layerwise copy-back: fresh. With VLLM_ROCM_USE_AITER=1 and "
         "VLLM_ROCM_USE_AITER_LINEAR=0 (a supported setting) the ROCm block kernel is "
         "TritonFp8BlockScaledMMKernel, which keeps e8m0 for DeepSeek V4 FP4-expert checkpoints "
         "(is_scale_e8m0), so _wo_b_scale is a copy and stays stale after a layerwise or "
         "kernel-format reload (probe 29: e8m0 copy keeps 0.125 after the param became 4.0; fp32 "
         "reference follows). TP in that configuration; close call because the default "
         "configuration is FP. derives_from 'self.wo_b' is loose: the source is "
         "wo_b.weight_scale_inv."),
    30: ("vllm/models/inkling/amd/moe.py", 340,
         "raw = x @ self.w13_weight.view(-1, x.shape[-1]).T",
         "TP", True, False, False,
         "InklingSinkExperts.load_weight (called from the MoE block's load_expert_weight, "
         "moe.py:570) writes self.w13_weight.data.copy_(weight) and never calls a weight_loader. "
         "Layerwise reload: the param is a meta placeholder, the copy is a no-op, load_numel stays "
         "0, finalize warns 'Failed to load weights' and puts the old kept tensor back: the "
         "checkpoint weight stays at its old value (probe 30: reload with 7.0 leaves 1.0). "
         "forward reads it every call (audit reader correct). A kernel-format reload would refill "
         "it, but the layerwise path alone makes this TP."),
    31: ("vllm/models/kimi_k3/nvidia/dspark_mla.py", 286, "self._context_kv_norm_weights,",
         "TP", True, False, False,
         "Store: _build_fused_context_kv_metadata stacks the draft layers' kv_a_layernorm.weight "
         "into a new contiguous tensor; it runs from the drafter's model-level "
         "process_weights_after_loading (dspark_mla.py:536-537), initial load only (the lazy "
         "hasattr guard never rebuilds either). A draft weight update (start_draft_weight_update: "
         "layerwise on the drafter) or a kernel-format reload refills each norm weight in place but "
         "not the stacked copy (probe 31: norm 8.0, stacked 1.0). Reader: "
         "_precompute_fused_context_kv passes it to ops.rms_norm on every context precompute "
         "(audit reader correct)."),
    32: ("vllm/models/kimi_k3/nvidia/specialized_decode/cutedsl/mla/prepared.py", 252,
         "mq(*q_args, s)",
         "TP", True, True, False,
         "PreparedMla is built once by SpecializedDecode after the weights load (never rebuilt on "
         "reload). self.weights = (norms, q_b_proj.weight, W_UK_T) at line 153, extended at line 154 "
         "with (W_UV, _q_scale_inv, _k_scale_inv); self.views (line 159) wraps the same storages for "
         "the CuTe kernels. The line-153 elements are kept params refilled in place (W_UK_T/W_UV by "
         "replace_parameter copy in the deferred MLA PWAL). But MultiHeadLatentAttention's PWAL "
         "(kimi_k3/nvidia/mla.py:475-480) runs on the live layer at every layerwise reload and "
         "register_buffer's NEW _q_scale_inv/_k_scale_inv; the tuple keeps the old buffers alive, so "
         "the query kernel reads the old reciprocal scales (probe 32: tuple keeps 0.5, layer has 0.25 "
         "after q_scale 2->4). TP for the attribute; close call because the elements the audit named "
         "(line 153) are all fresh and the stale ones come from line 154. Audit reader is wrong: "
         "prepare_cache:176 only reads layout (shape/stride/dtype) to compile kernels; the values "
         "are read through self.views by the query kernel launched at line 252 (qinv/kinv, line 240). "
         "derives_from q_b_proj.weight is wrong for the staleness (that param is refilled in place)."),
    33: ("vllm/models/muse_spark/nvidia/muse_moe_runner.py", 531,
         "output1_scale_gate_scalar=self.quant_config.g1_alphas,",
         "TP", True, False, False,
         "Store: MuseSparkModelOptNvFp4FusedMoE.process_weights_after_loading (quant-method PWAL, "
         "reruns on every layerwise reload, on the temporaries) builds a new "
         "MuseSparkNvFp4MoEQuantConfig with fresh g1_alphas/g2_alphas/g1_scale_c/a*_gscale tensors "
         "and w1_scale/w2_scale referencing the (temporary) layer params, then a new moe_kernel. "
         "CUDA graphs captured the old QC tensors; after reload the old QC/experts are dropped and "
         "their storage freed (probe 33: new QC, g1_alphas storage moved; QC.w1_scale aliases the "
         "reload temporary and a kernel-format reload after it leaves it at the old value). TP "
         "without the kernel-format clause (storage moves). Audit reader is wrong: "
         "eep_reconfigure.py:37 only hands the QC reference to a new experts object during elastic "
         "EP reconfiguration; the value is read by the experts' "
         "trtllm_fp4_block_scale_routed_moe call (muse_moe_runner.py:531, g1_alphas). derives_from "
         "layer.w13_weight_scale is partial: g1_alphas derives from w13_weight_scale_2 and "
         "w13_input_scale."),
    34: ("vllm/v1/attention/backends/flashinfer.py", 2438, "self.sinks,",
         "TP", True, True, True,
         "Store: FlashInferImpl.process_weights_after_loading: the model's sinks param is bf16 "
         "(make_attention_sink uses the default dtype), so self.sinks = source.to(float32) once, "
         "then copy_ on later PWALs. Layerwise reload: the deferred attention PWAL reruns on the "
         "live layer after the source param is refilled, so sinks is refreshed in place (probe 34: "
         "3.0). A kernel-format reload after it refills only the bf16 source param; the fp32 copy "
         "keeps the previous value (probe 34: source 6.0, sinks 3.0). Read by the sink-attention "
         "prefill wrapper (audit reader correct; the decode paths at 2557+ read it too). TP only "
         "under the kernel-format clause (like the ZenCPU f32 scale copy); close call."),
    35: ("vllm/v1/attention/backends/mla/flashinfer_mla.py", 442, "bmm1_scale=self.bmm1_scale,",
         "TP", True, False, False,
         "Lazy Python float: built once in forward_mqa behind `if self.bmm1_scale is None` as "
         "scale * layer._q_scale_float * layer._k_scale_float (quantized KV cache), never reset by "
         "any PWAL. A reload with new q/k checkpoint scales updates layer._q/_k_scale_float "
         "(kv_cache.py:86-88) but not this cache, and graph capture bakes the scalar into "
         "trtllm_batch_decode_with_kv_cache_mla (audit reader correct). Host scalar from checkpoint "
         "scales: TP per the third reading. weight_derived: from the checkpoint q/k scale tensors."),
    36: ("vllm/v1/attention/backends/mla/flashinfer_mla.py", 443, "bmm2_scale=self.bmm2_scale,",
         "TP", True, False, False,
         "Same as position 35: lazy `bmm2_scale = 1.0 * layer._k_scale_float`, built once, never "
         "reset, passed to the trtllm MLA decode kernel (audit reader correct); stale after a "
         "reload that changes k_scale, and baked into captured graphs."),
    37: ("vllm/v1/attention/backends/mla/flashinfer_mla_sparse.py", 648,
         "bmm1_scale=self.bmm1_scale,",
         "TP", True, False, False,
         "Same lazy host-scalar pattern in FlashInferMLASparseImpl (lines 516-519, built once behind "
         "`if self.bmm1_scale is None` from _q_scale_float * _k_scale_float, never reset); read by "
         "trtllm_batch_decode_with_kv_cache_mla in _forward_mqa_kernel (audit reader correct)."),
    38: ("vllm/v1/attention/backends/rocm_aiter_fa.py", 1578,
         "k_qscale_asm = attn_metadata.k_scale[layer.layer_name]",
         "TP", True, False, False,
         "Store: AiterFlashAttentionMetadataBuilder._build_asm_kv_scale_tables builds, once (guard "
         "`self.k_scale is not None`), a dict layer -> dense table torch.full(..., "
         "layer._k_scale_float) from the process-wide AsmKvScaleTables cache. No reload path resets "
         "it: after a reload with new KV scales, layer._k_scale_float and _k_scale change but the "
         "asm decode kernel keeps reading the old-scale table. Audit reader (build:840, "
         "k_scale=self.k_scale) is the hand-off into the per-step metadata, not wrong but indirect; "
         "the value is consumed at forward:1578 and passed as K_QScale_asm to "
         "rocm_aiter_ops.paged_attention_common."),
    39: ("vllm/v1/attention/backends/rocm_aiter_fa.py", 1579,
         "v_qscale_asm = attn_metadata.v_scale[layer.layer_name]",
         "TP", True, False, False,
         "Same as position 38 for the V table (from layer._v_scale_float), built once and never "
         "rebuilt; consumed at forward:1579 as V_QScale_asm. Audit reader (build:841) is the "
         "metadata hand-off, indirect but not wrong."),
}


def reader_line(path: str, line: int, fragment: str) -> str:
    text = (VLLM_ROOT / path).read_text().splitlines()[line - 1].strip()
    if fragment not in text:
        sys.exit(f"{path}:{line}: expected {fragment!r}, found {text!r}")
    return f"{path}:{line}: {text}"


def main() -> None:
    sample = json.loads(DRAW.read_text())["sample"]
    out = []
    for index in range(27, 40):
        d = sample[index]
        path, line, frag, verdict, wd, close, kfc, why = J[index]
        reader = reader_line(path, line, frag)
        out.append({
            "index": index,
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
            "kernel_format_clause_only": kfc,
            "reader_quote": reader,
        })
    OUT.write_text(json.dumps(out, indent=1) + "\n")
    tp = sum(o["judgement"] == "TP" for o in out)
    print(f"wrote {OUT}: {len(out)} items, TP {tp}, FP {len(out) - tp}, "
          f"close calls {[o['index'] for o in out if o['close_call']]}, "
          f"kernel-format-clause-only {[o['index'] for o in out if o['kernel_format_clause_only']]}")


if __name__ == "__main__":
    os.chdir(Path(__file__).resolve().parents[3])
    main()
