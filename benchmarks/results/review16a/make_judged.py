"""Write tests/resources/static_precision_outside9_judged_a.json (judge A, positions 0-13).
Reader lines are checked verbatim against the installed vLLM 0.33.0 source."""
import json
import os
from pathlib import Path

import vllm

ROOT = Path(__file__).resolve().parents[3]
VLLM = Path(os.path.dirname(vllm.__file__)).parent
R = "benchmarks/results/review16a/"

J = {
 0: dict(judgement="TP", reader=("vllm/models/deepseek_v4/xpu/xpu_sparse.py", 109),
   weight_derived=True, kfo=False, close=False,
   why="Plain tensor attribute set on wo_a by XPUMxFp8LinearKernel PWAL (quant-method PWAL, reruns on every "
       "layerwise reload). The rerun rebinds layer.bmm_scale to a new .contiguous() tensor; the old one keeps "
       "the first-load value. DeepseekV4XPUAttention._o_proj runs outside the eager attention break "
       "(attention.py:505), so an XPU graph (supports_xpu_graph: torch>=2.11) captures the old storage: moved "
       "storage a captured path reads. A kernel-format reload that refills weight/weight_scale also leaves it "
       "stale. Derived from the checkpoint weight_scale. Audit reader correct. Probe: " + R
       + "probe_item00_02_xpu_bmm.out (moved, old object keeps first-load value, stale after kernel-format)."),
 1: dict(judgement="TP", reader=("vllm/models/deepseek_v4/xpu/xpu_sparse.py", 108),
   weight_derived=True, kfo=False, close=False,
   why="Same mechanism as item 0: bmm_weight is a .contiguous() [G,K,N/G] copy of layer.weight built in the "
       "XPU MXFP8 kernel PWAL; a layerwise rerun rebinds it (moved) and the captured XPU graph of _o_proj reads "
       "the old copy; a kernel-format reload of weight leaves the copy stale. Audit reader correct. Probe: "
       + R + "probe_item00_02_xpu_bmm.out."),
 2: dict(judgement="TP", reader=("vllm/models/deepseek_v4/xpu/xpu_sparse.py", 109),
   weight_derived=True, kfo=False, close=False,
   why="XPUFp8BlockScaledMMKernel._prepare_bmm_params (linear-kernel PWAL) rebinds layer.bmm_scale to a new "
       ".contiguous() permute of the block scales on every layerwise rerun; the captured XPU graph of "
       "DeepseekV4XPUAttention._o_proj keeps the old storage (moved). Kernel-format reload of weight_scale_inv "
       "leaves it stale too. Audit reader correct. Probe: " + R + "probe_item00_02_xpu_bmm.out."),
 3: dict(judgement="TP", reader=("vllm/model_executor/layers/fused_moe/experts/cpu_moe.py", 1660),
   weight_derived=True, kfo=True, close=False,
   why="CPU-only (zentorch), so TP only if a reload leaves the value stale (reading 1). The experts object is "
       "built in CompressedTensorsW8A8Int8MoEMethod PWAL (make_int8_moe_kernel). Evidence error: w13_weight_scale "
       "is created float32 (E,2I,1) contiguous, so .detach().to(float32).reshape().contiguous() is a VIEW of the "
       "scale param, not a new tensor. After the first load it aliases the kept param (a kernel-format reload "
       "right then refills it). After a layerwise reload the rebuilt experts object views the reload temporary; "
       "eager reads it (correct values), and a kernel-format reload after it refills only the kept param, so "
       "_w1_scale_f32 goes stale: TP under the 'kernel-format reload after it' clause only (reading 2). "
       "Probe: " + R + "probe_moe_refs.out (A: aliases kept storage; C: stale after layerwise+kernel-format)."),
 4: dict(judgement="TP", reader=("vllm/model_executor/layers/fused_moe/experts/cpu_moe.py", 1661),
   weight_derived=True, kfo=True, close=False,
   why="As item 3 for w2: _w2_scale_f32 is a view of the float32 (E,H,1) w2_weight_scale (audit's 'new tensor' "
       "is wrong); after a layerwise reload it views the reload temporary and a kernel-format reload after it "
       "leaves it stale. CPU-only, TP only through the kernel-format clause. Probe: " + R + "probe_moe_refs.out."),
 5: dict(judgement="TP", reader=("vllm/model_executor/layers/fused_moe/experts/nvfp4_emulation_moe.py", 530),
   weight_derived=True, kfo=True, close=False,
   why="Reference to quant_config.w2_scale (= layer.w2_weight_scale) taken in the experts __init__, which runs "
       "inside ModelOpt/CT NVFP4 MoE PWAL (make_nvfp4_moe_kernel). After a layerwise reload it points at the "
       "reload temporary; eager reads the temporary and a kernel-format reload after it refills only the kept "
       "param: stale. A captured graph reads the old experts object whose reference is the kept param, refilled "
       "in place, so TP rests on the kernel-format clause only (reading 2 names exactly this w*_scale_val "
       "pattern). Audit reader correct. Probe: " + R + "probe_moe_refs.out (real experts class on CPU)."),
 6: dict(judgement="TP", reader=("vllm/model_executor/layers/fused_moe/router/gate_linear.py", 309),
   weight_derived=True, kfo=True, close=True,
   why="Real reader: the ROCm custom op call at gate_linear.py:308-309, every forward (eager and HIP graph). "
       "Evidence error: _bf16x3_weight is a registered NON-PERSISTENT buffer (register_buffer(None) at "
       "gate_linear.py:177), so the audit's 'moved by layerwise rerun' does not happen: restore_layer_on_meta "
       "deletes the buffer, PWAL re-sets it as a plain attribute, and _place_kernel_tensors' register_buffer "
       "raises KeyError \"attribute '_bf16x3_weight' already exists\" (layerwise reload fails, a real bug but "
       "not a stale value). A kernel-format reload of gate.weight refills the weight in place and leaves the "
       "bf16x3 split reconstructing the OLD weight, read by the kernel: stale. TP only through the kernel-format "
       "path; close because that kernel-format reload is not 'after' a (crashing) layerwise one. Probe: " + R
       + "probe_item06_gate_bf16x3.out (real _GateLinearMethod + split_bf16x3)."),
 7: dict(judgement="TP", reader=("vllm/model_executor/layers/fused_moe/runner/moe_runner.py", 911),
   weight_derived=True, kfo=False, close=False,
   why="Lazy cache: torch.cat([gate.weight, shared_expert_gate.weight]) built once on the first forward "
       "(_maybe_fuse_gate_weights) and never reset anywhere in vLLM 0.33.0 (only moe_runner.py:281/351/353/911 "
       "touch it). Both reload paths refill the gate params in place; the concatenated copy keeps the first-load "
       "values and is what the router GEMM reads at :911 in eager and captured runs. Audit reader correct."),
 8: dict(judgement="TP", reader=("vllm/model_executor/layers/fused_moe/experts/flashinfer_cutlass_moe.py", 306),
   weight_derived=True, kfo=False, close=False,
   why="Wrong reader in the audit: triton_moe.py:563 (TritonExperts._base_w2_fn) is on no NVFP4 path; the only "
       "Triton-derived NVFP4 experts (Nvfp4QuantizationEmulationTritonExperts) override apply and set "
       "quant_config._w2.scale=None. Real readers: FlashInferExperts.apply nvfp4 quant_scales (:306 a1_gscale, "
       ":310 w2_scale). The container is rebuilt by every PWAL; a1_gscale/a2_gscale are fresh 1/a13_scale "
       "products (from the checkpoint w13_input_global_scale), so a layerwise rerun moves them and a captured "
       "CUDA graph keeps reading the old tensors: TP without the kernel-format clause. The w2_weight_scale the "
       "audit names is only a reference (kept param at first load, reload temporary after layerwise), stale "
       "only via kernel-format after layerwise. Probe: " + R + "probe_moe_refs.out (a1_gscale moved, old keeps "
       "first-load value)."),
 9: dict(judgement="TP", reader=("vllm/model_executor/layers/fused_moe/experts/trtllm_fp8_moe.py", 495),
   weight_derived=True, kfo=True, close=False,
   why="Wrong reader in the audit: triton_moe.py:442 is not on an MXFP8 path (MXFP8 backends are FLASHINFER_TRTLLM, "
       "DeepGEMM, Marlin, XPU, AITER, Humming, Mxfp8Native/EmulationTriton; the two Triton ones override apply "
       "and read w1_scale_val). Real reader: TrtLlmFp8ExpertsMonolithic._apply_block_scale reads "
       "self.quant_config.w1_scale. The MXFP8 config (block [1,32], a1/a2 None) holds only references to "
       "layer.w13/w2_weight_scale built in PWAL: after a layerwise reload they are the reload temporaries, "
       "eager reads them, and a kernel-format reload after it refills only the kept params: stale. A captured "
       "graph reads the kept params (refilled). TP under the kernel-format clause only (reading 2). Probe: "
       + R + "probe_moe_refs.out."),
 10: dict(judgement="TP", reader=("vllm/model_executor/layers/quantization/compressed_tensors/schemes/"
                                  "compressed_tensors_wNa8o8.py", 251),
   weight_derived=True, kfo=False, close=False,
   why="_take_act_scale clones the loaded input_scale param and deletes it; the scheme object persists and its "
       "PWAL reruns on every layerwise reload, rebinding self._input_scale to a new clone. apply_weights reads "
       "it every call; a captured CUDA graph keeps the old clone (first-load value): moved storage a captured "
       "path reads. (Kernel-format reload of input_scale raises AttributeError: the param is gone.) Derived "
       "from a checkpoint activation-scale parameter. Audit reader correct. Probe: " + R
       + "probe_item10_11_wna8o8.out (real scheme PWAL)."),
 11: dict(judgement="TP", reader=("vllm/model_executor/layers/quantization/compressed_tensors/schemes/"
                                  "compressed_tensors_wNa8o8.py", 254),
   weight_derived=True, kfo=False, close=False,
   why="As item 10 for output_scale: a layerwise rerun rebinds self._output_scale to a new clone; captured "
       "CUDA graphs keep reading the old one. Audit reader correct. Probe: " + R + "probe_item10_11_wna8o8.out."),
 12: dict(judgement="TP", reader=("vllm/model_executor/layers/fused_moe/experts/flashinfer_cutlass_moe.py", 290),
   weight_derived=True, kfo=False, close=False,
   why="Fp8MoEMethod._init_moe_kernel rebuilds the config on every PWAL. The audit's reader (triton_moe.py:442, "
       "FP8 TRITON backend) is a real reader, but it reads only a reference to w13_weight_scale: stale only "
       "via kernel-format after layerwise. Wrong weight for the stronger path: with FLASHINFER_CUTLASS "
       "per-tensor, the product made with w13_weight_scale (g1_alphas) is registered as a layer Parameter, "
       "kept and refilled, not moved; what moves is a1_gscale/a2_gscale = 1/w13|w2_input_scale, fresh in each "
       "config, read at :290 inside the captured MoE op, so the old graph reads the old tensors: TP without "
       "the kernel-format clause. Probe: " + R + "probe_moe_refs.out (TRITON: refs; FLASHINFER_CUTLASS: "
       "a2_gscale moved, g1_alphas kept)."),
 13: dict(judgement="TP", reader=("vllm/model_executor/layers/fused_moe/experts/flashinfer_cutlass_moe.py", 290),
   weight_derived=True, kfo=False, close=False,
   why="ModelOptFp8MoEMethod._setup_kernel rebuilds the config on every PWAL with make_fp8_moe_quant_config "
       "(per-tensor FP8), same as item 12: the audit's triton_moe.py:442 reads a reference (kernel-format "
       "clause only); on FLASHINFER_CUTLASS the fresh a2_gscale = 1/w2_input_scale moves on a layerwise rerun "
       "and the captured MoE op reads the old one (:290). g1_alphas (the w13_weight_scale product) is a kept "
       "layer Parameter, not moved. Probe: " + R + "probe_moe_refs.out."),
}


def line(path, n):
    return (VLLM / path).read_text().splitlines()[n - 1].strip()


draw = json.loads((ROOT / "tests/resources/static_precision_outside9_draw.json").read_text())["sample"]
items = []
for i in range(14):
    d, j = draw[i], J[i]
    path, n = j["reader"]
    text = line(path, n)
    items.append({
        "index": i, "file": d["file"], "line": d["line"], "attr": d["attr"],
        "category": d["category"], "severity": d["severity"],
        "audit_reader": d["reader"], "judgement": j["judgement"],
        "reader": f"{path}:{n}: {text}", "weight_derived": j["weight_derived"],
        "why": j["why"], "close_call": j["close"], "kernel_format_clause_only": j["kfo"],
        "reader_quote": f"{path}:{n} {text}",
    })
out = ROOT / "tests/resources/static_precision_outside9_judged_a.json"
out.write_text(json.dumps({"judge": "a", "items": items}, indent=1) + "\n")
tp = sum(it["judgement"] == "TP" for it in items)
print(f"wrote {out}: {tp} TP / {len(items) - tp} FP; kernel-format-only TPs:",
      [it["index"] for it in items if it["kernel_format_clause_only"]])
for it in items:
    print(it["index"], it["judgement"], it["reader_quote"])
