# ruff: noqa: E501
"""Write tests/resources/static_precision_outside8_judged_a.json (judge a, positions 0-13)."""

import json
from pathlib import Path

import vllm

ROOT = Path(__file__).resolve().parents[3]
SRC = Path(vllm.__file__).resolve().parent.parent
draw = json.loads((ROOT / "tests/resources/static_precision_outside8_draw.json").read_text())[
    "sample"
]

V = "vllm/model_executor/layers/fused_moe/experts/"
TOY = "CPU toy benchmarks/results/review13a/toy_reload.py (output toy_reload.out)"

J = {
    0: dict(
        judgement="TP",
        reader="vllm/model_executor/kernels/linear/nvfp4/b12x.py:193",
        weight_derived=True,
        kernel_format_clause_only=True,
        close_call=False,
        why="b12x.py:148 runs in the linear kernel's PWAL, inside the quant-method PWAL, on every layerwise reload. "
        "pack_weight -> pack_nvfp4_weight (flashinfer/experimental/b12x/gemm/blockscaled/_a16.py:66-97) copies nothing: "
        "the NVFP4LinearWeight borrows layer.weight, a zero-copy view of layer.weight_scale (scale_storage, 'zero-copy flat byte view') "
        "and layer.weight_global_scale. After a layerwise reload it borrows the reload temporaries; the kept params are refilled in place, "
        "so CUDA graphs (which captured the kept storage) and eager both see the new values. A kernel-format reload after it refills only the "
        "kept params, and eager apply_weights (b12x.py:191-195, blockscaled.mm) keeps reading the temporaries: stale. TP only by the "
        "'kernel-format reload after it' clause, the rule's 'references built inside quant-method PWAL' reading (toy pattern 'view' confirms). "
        "Evidence error: the audit's reason says 'stores a new tensor'; it is a container of borrowed views. Reader correct.",
    ),
    1: dict(
        judgement="TP",
        reader="vllm/models/deepseek_v4/xpu/xpu_sparse.py:118",
        weight_derived=True,
        kernel_format_clause_only=False,
        close_call=False,
        why="layer.bmm_scale is a fresh .contiguous() copy of the block weight scale, set as a plain attribute of wo_a in "
        "XPUFp8BlockScaledMMKernel PWAL (is_bmm set by deepseek_v4/attention.py:279). DeepseekV4XPUAttention._o_proj loads it (:109) and "
        "passes it to torch.ops.vllm.xpu_fp8_bmm (:113, argument at :118). _o_proj runs outside the eager break (attention.py:505), so it is in "
        "the captured XPU graph (xpu.py:383-386 keeps cudagraph_mode when supports_xpu_graph). Layerwise reload reruns PWAL and rebinds bmm_scale "
        "to a new tensor, so a captured graph reads moved (freed) storage; a kernel-format reload refills weight_scale_inv but never this copy: stale. "
        "Toy pattern 'copy' confirms both. Audit reader :109 is the attribute read on the same path (acceptable; the kernel call is :113-:118).",
    ),
    2: dict(
        judgement="TP",
        reader=V + "flashinfer_b12x_moe.py:293",
        weight_derived=False,
        kernel_format_clause_only=False,
        close_call=True,
        why="Close call: TP rests only on 'moves storage a captured path reads' for a constant that is never stale; a reading that demands a wrong value would make it FP. W4A16 branch (a2_gscale is None, B12X use_a16 -> nvfp4_w4a16_moe_quant_config): _fc2_input_scale = torch.ones(E) allocated in the experts' "
        "PWAL. Every quant PWAL (compressed_tensors_moe_w4a4_nvfp4.py:270, modelopt.py:1108) builds a new FlashInferB12xExperts, so a layerwise "
        "reload allocates a new tensor and the old experts object (and its storage) is freed; the CUDA graph captured through "
        "wrapper.run(fc2_input_scale=...) reads the old address. The value is a constant 1.0, so it is never stale, but the rule's TP covers "
        "'moves storage a captured path reads' without requiring a weight-derived value. Toy pattern 'const' shows the storage moves. Severity "
        "(warning) not judged. Audit reader correct.",
    ),
    3: dict(
        judgement="TP",
        reader=V + "flashinfer_b12x_moe.py:291",
        weight_derived=True,
        kernel_format_clause_only=True,
        close_call=False,
        why="flashinfer_convert_sf_to_mma_layout (flashinfer/cute_dsl/utils.py:367) returns a strided view ('Return strided view, NOT contiguous') of "
        "self.w1_scale = quant_config.w1_scale = layer.w13_weight_scale, after the experts' PWAL rebound its .data (line 106). Built in experts PWAL "
        "inside quant-method PWAL: after a layerwise reload it views the reload temporary; the kept param is refilled in place, so the captured graph "
        "and eager agree. A kernel-format reload after it refills only the kept w13_weight_scale and eager wrapper.run(w1_weight_sf=...) reads the "
        "temporary's view: stale. TP by the kernel-format clause only (toy pattern 'view'). Evidence error: reason says 'stores a new tensor'; it is a view "
        "of the layer parameter (of the temporary after reload). Reader correct.",
    ),
    4: dict(
        judgement="TP",
        reader=V + "nvfp4_emulation_moe.py:530",
        weight_derived=True,
        kernel_format_clause_only=True,
        close_call=False,
        why="w2_scale_val = quant_config.w2_scale, which make_nvfp4_moe_quant_config (EMULATION, oracle/nvfp4.py:566-577) sets to layer.w2_weight_scale "
        "itself. The experts are constructed in make_nvfp4_moe_kernel inside quant-method PWAL, so after a layerwise reload the reference is the reload "
        "temporary; eager reads it, a kernel-format reload after it refills only the kept parameter: stale. This is literally the rule's "
        "'an experts object's w1_scale_val' case (toy pattern 'experts_ref'). Graphs read the kept param, refilled in place, so no layerwise-only TP. "
        "Reader correct.",
    ),
    5: dict(
        judgement="TP",
        reader=V + "ocp_mx_emulation_moe.py:202",
        weight_derived=True,
        kernel_format_clause_only=True,
        close_call=False,
        why="w1_scale_val = quant_config.w1_scale = layer.w13_weight_scale (quark_moe.py:1933-1940 ocp_mx_moe_quant_config for EMULATION; replace_parameter "
        "keeps the object at startup). Experts built in make_mxfp4_moe_kernel inside QuarkOCP_MX PWAL (_setup_kernel, quark_moe.py:1867-1879), so after "
        "layerwise reload it references the temporary; _dequantize_weights(w1, self.w1_scale_val, ...) in eager goes stale after a kernel-format reload. "
        "Exactly the rule's named example (experts' w1_scale_val); toy 'experts_ref'. Reader correct.",
    ),
    6: dict(
        judgement="TP",
        reader=V + "ocp_mx_emulation_moe.py:205",
        weight_derived=True,
        kernel_format_clause_only=True,
        close_call=False,
        why="Same as item 5 for w2: w2_scale_val = layer.w2_weight_scale reference captured in experts __init__ inside quant-method PWAL; points at the "
        "reload temporary after a layerwise reload, stale after a kernel-format reload. TP under the kernel-format clause reading. Reader correct.",
    ),
    7: dict(
        judgement="TP",
        reader="vllm/model_executor/layers/fused_moe/runner/moe_runner.py:911",
        weight_derived=True,
        kernel_format_clause_only=False,
        close_call=False,
        why="_combined_gate_weight = torch.cat([gate.weight, shared_expert_gate.weight]) is a copy built once behind 'is None' on the first forward "
        "(_maybe_fuse_gate_weights, called at :909 when _fse_fuse_gate). Nothing in 0.33.0 resets it (only moe_runner.py:281/351/353/911 mention it). "
        "Layerwise reload refills gate.weight in place; the cached cat keeps the old weights forever and dispatch_unquantized_gemm()(self, hidden_states, "
        "self._combined_gate_weight, None) uses them: stale under plain layerwise reload (toy pattern 'lazy': still weights A). Reader correct.",
    ),
    8: dict(
        judgement="TP",
        reader=V + "cutlass_moe.py:1452",
        weight_derived=True,
        kernel_format_clause_only=True,
        close_call=False,
        why="moe_quant_config is rebuilt in CompressedTensorsW4A8Fp8MoEMethod PWAL; int4_w4afp8_moe_quant_config -> FusedMoEQuantConfig.make stores "
        "references (w1_scale=layer.w13_weight_scale, g1_alphas=layer.w13_weight_chan_scale, ...), no products. After a layerwise reload they are "
        "the reload temporaries; the new CutlassExpertsW4A8Fp8 reads self.w1_scale -> quant_config.w1_scale in run_cutlass_moe_w4a8_fp8 (:1452); a "
        "kernel-format reload after it refills only the kept params: stale. Rule's 'a quant config's ...' reading (toy 'ref'). Evidence error: the "
        "audit reader modular_kernel.py:767 is the property accessor, not the kernel call; the real reader is cutlass_moe.py:1452.",
    ),
    9: dict(
        judgement="TP",
        reader=V + "trtllm_fp8_moe.py:495",
        weight_derived=True,
        kernel_format_clause_only=True,
        close_call=False,
        why="moe_quant_config rebuilt in CompressedTensorsW8A8Mxfp8MoEMethod PWAL; make_fp8_moe_quant_config block [1,32] -> FusedMoEQuantConfig.make holds "
        "references to layer.w13_weight_scale / w2_weight_scale (no products). After layerwise reload they are the temporaries; TrtLlmFp8ExpertsMonolithic "
        "(FLASHINFER_TRTLLM, first MXFP8 backend) passes gemm1_weights_scale=self.quant_config.w1_scale to trtllm_fp8_block_scale_moe; stale in eager after a "
        "kernel-format reload. Kernel-format clause only. Evidence error: audit reader modular_kernel.py:767 is a property accessor; real kernel-call reader "
        "trtllm_fp8_moe.py:495 (Modular variant :312).",
    ),
    10: dict(
        judgement="TP",
        reader=V + "marlin_moe.py:770",
        weight_derived=True,
        kernel_format_clause_only=True,
        close_call=False,
        why="moe_quant_config rebuilt in CompressedTensorsWNA16MoEMethod._setup_kernel (every PWAL); make_wna16_moe_quant_config -> int4/int8 *_w*a16 config holds "
        "references to layer.w13_weight_scale, zero points and biases (no products). After a layerwise reload they are the temporaries; MarlinExperts.apply "
        "passes w1_scale=self.w1_scale to fused_marlin_moe (TritonWNA16Experts: triton_moe.py:790); stale in eager after a kernel-format reload. Kernel-format "
        "clause only. Evidence error: audit reader modular_kernel.py:767 is the property accessor, not the kernel call.",
    ),
    11: dict(
        judgement="TP",
        reader="vllm/model_executor/layers/quantization/compressed_tensors/schemes/compressed_tensors_wNa8o8.py:251",
        weight_derived=True,
        kernel_format_clause_only=False,
        close_call=False,
        why="_take_act_scale clones layer.input_scale and delattrs the parameter, so the value lives only on the scheme object. A layerwise reload re-creates "
        "input_scale from restore metadata, reruns PWAL and rebinds self._input_scale to a new clone (toy 'clone': new storage, new value), freeing the old one. "
        "apply_weights runs inside the piecewise-captured linear forward on CUDA/ROCm (min capability 70), so the captured graph reads moved storage: TP by "
        "the layerwise clause. (A kernel-format reload of input_scale raises AttributeError: the parameter no longer exists; the CPU-only 'emptied source' "
        "FP reading does not apply to this GPU site.) Value is the checkpoint static activation scale. Reader correct.",
    ),
    12: dict(
        judgement="TP",
        reader="vllm/model_executor/layers/quantization/compressed_tensors/schemes/compressed_tensors_wNa8o8.py:254",
        weight_derived=True,
        kernel_format_clause_only=False,
        close_call=False,
        why="Same as item 11 for output_scale: a clone held on the scheme, the parameter deleted; each layerwise reload rebinds self._output_scale to new storage "
        "while captured graphs keep the old address (moved storage). TP by the layerwise clause. Reader correct.",
    ),
    13: dict(
        judgement="TP",
        reader=V + "triton_moe.py:442",
        weight_derived=True,
        kernel_format_clause_only=False,
        close_call=False,
        why="Fp8MoEMethod._init_moe_kernel rebuilds moe_quant_config on every PWAL (also the pre-processed path). make_fp8_moe_quant_config stores "
        "w1_scale=layer.w13_weight_scale(_inv) by reference; after a layerwise reload it is the temporary and TritonExperts reads it as self.w1_scale "
        "(triton_moe.py:442 in invoke_fused_moe_triton_kernel): stale after a kernel-format reload. Not clause-only: on the FlashInfer-CUTLASS/HPC "
        "per-tensor path the same container holds fresh a1_gscale/a2_gscale = 1.0/a_scale (oracle/fp8.py:808-809), read at flashinfer_cutlass_moe.py:290 "
        "'self.a2_gscale,  # 1.0 / w2_input_scale' in the captured MoE op; a layerwise rerun replaces them, so captured graphs read moved storage. "
        "Evidence error: audit reader modular_kernel.py:767 is a property accessor, not the kernel call.",
    ),
}

items = []
for i in range(14):
    d = draw[i]
    j = J[i]
    path, line = j["reader"].rsplit(":", 1)
    text = (SRC / path).read_text().splitlines()[int(line) - 1].strip()
    items.append(
        {
            "index": i,
            "file": d["file"],
            "line": d["line"],
            "attr": d["attr"],
            "category": d["category"],
            "severity": d["severity"],
            "audit_reader": d["reader"],
            "judgement": j["judgement"],
            "reader": f"{path}:{line}: {text}",
            "weight_derived": j["weight_derived"],
            "why": j["why"],
            "close_call": j["close_call"],
            "kernel_format_clause_only": j["kernel_format_clause_only"],
            "reader_quote": f"{path}:{line} {text}",
        }
    )
out = ROOT / "tests/resources/static_precision_outside8_judged_a.json"
out.write_text(json.dumps({"judge": "a", "items": items}, indent=1) + "\n")
for it in items:
    print(it["index"], it["judgement"], it["kernel_format_clause_only"], it["reader_quote"])
