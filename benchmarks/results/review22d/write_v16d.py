"""Write tests/resources/static_recall_outside_v16d_vllm_0.33.json (review22d, judge D of recall v16).

Quotes are read from the installed vLLM 0.33.0 files; held_out is computed against every earlier
list static_recall_outside_v*_vllm_0.33.json (same file and attr within 3 lines). Standard library
and vllm only.  Run: python3 benchmarks/results/review22d/write_v16d.py
"""
from __future__ import annotations

import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from keys import EARLIER, RES, earlier_keys, quote  # noqa: E402

DRAW = json.loads((RES / "static_recall_file_v16_draw.json").read_text())
MX = "vllm/model_executor/"
PARAM = MX + "parameter.py"
CUT = MX + "kernels/linear/nvfp4/cutlass.py"
OMX8 = MX + "layers/quantization/online/mxfp8.py"
QRK = MX + "layers/quantization/quark/schemes/quark_w4a16_int4.py"
EXL = MX + "kernels/linear/mixed_precision/exllama.py"
CDSL = MX + "layers/fused_moe/experts/flashinfer_cutedsl_moe.py"
CTW8 = MX + "layers/quantization/compressed_tensors/schemes/compressed_tensors_w8a8_fp8.py"
CTEMB = MX + "layers/quantization/compressed_tensors/compressed_tensors_embedding.py"
AMX = "vllm/v1/attention/backends/mla/amx_mla.py"
MK = MX + "layers/fused_moe/modular_kernel.py"
ONV = MX + "layers/fused_moe/oracle/nvfp4.py"
CTMOE = MX + "layers/quantization/compressed_tensors/compressed_tensors_moe/compressed_tensors_moe_w8a8_fp8.py"
FBG = MX + "layers/quantization/fbgemm_fp8.py"
MXK = MX + "kernels/linear/mxfp8/Mxfp8LinearKernel.py"
MLA = MX + "layers/attention/mla_attention.py"
OFP8 = MX + "layers/fused_moe/oracle/fp8.py"
MOEB = MX + "layers/quantization/online/moe_base.py"
MOPT = MX + "layers/quantization/modelopt.py"
UTL = MX + "utils.py"

# (file, line, attr, real, close_call, declared_by_spec, why, [quote file:line ...])
C = [
    # 1 parameter.py
    (PARAM, 505, "partitions", False, False, False,
     "SharedWeightParameter.process_weights_after_loading rewraps each partition in a new nn.Parameter over the same `.data` (a view of the kept storage, no copy); HadamardTransform, its only user (compressed_tensors/transform/module.py:54-66), is in the layerwise SKIP_MODULES, and the div_ is guarded by a data_ptr set so a rerun does not rescale. No new storage, nothing stale. Not real.",
     [(PARAM, 505), (PARAM, 506)]),
    (PARAM, 575, "data", False, False, False,
     "permute_param_layout_: `.data` rebind of a registered parameter to a permuted view of its own storage, called from kernel PWAL before replace_parameter into the same name; kept object refilled by copy-back. Not real.",
     [(PARAM, 575)]),
    (PARAM, 581, "_packed_dim", False, False, False,
     "A Python int (packed-dimension index) set after permuting. Not a tensor. Not real.",
     [(PARAM, 581)]),
    # 2 nvfp4/cutlass.py
    (CUT, 38, "weight_scale", False, False, False,
     "replace_parameter target: swizzled block scale stored into the registered weight_scale (utils.py replace_parameter keeps the object); layerwise copy-back refills it, a kernel-format reload copy_s into it; apply_weights reads layer.weight_scale per call (:69). Not real.",
     [(CUT, 38), (CUT, 69)]),
    (CUT, 44, "weight", False, False, False,
     "replace_parameter target: padded FP4 weight into the kept registered weight (object kept, `.data` rebound on the first load, copy_ on reload). Not real.",
     [(CUT, 44), (CUT, 67)]),
    # 3 online/mxfp8.py
    (OMX8, 198, "moe_quant_config", True, False, False,
     "Online MXFP8 MoE rebuilds its quant config in every quant-method PWAL from layer.w13/w2_weight_scale (:216-217), scales that PWAL itself registers with replace_parameter (:195-196; the online create_weights registers no scale, so on a layerwise reload they are new Parameters on the reload temporary layer). Copy-back refills the kept scale Parameters, so the config and the moe_kernel built from it (:201-202) alias reload temporaries; the experts read the scales through quant_config (modular_kernel.py:767) on every apply (moe_base.py:265). A later kernel-format reload refills the kept scales and leaves the config stale; a captured graph names the startup storage. CPU toy (a) confirms the pattern with vLLM's own reload functions. Real.",
     [(OMX8, 198), (OMX8, 195), (OMX8, 216), (OMX8, 202), (MOEB, 265)]),
    (OMX8, 201, "moe_kernel", False, False, False,
     "The FusedMoEKernel holder rebuilt in PWAL: a kernel holder itself (its experts' tensors are judged at their own stores). Not real.",
     [(OMX8, 201)]),
    (OMX8, 195, "w13_weight_scale", False, False, False,
     "replace_parameter target registered by PWAL; on reload the kept Parameter (registered at initialize) is refilled by copy-back and re-placed; the registered parameter itself is not a stale site. Not real.",
     [(OMX8, 195)]),
    (OMX8, 74, "kernel", False, False, False,
     "The MXFP8 linear kernel object, built once in create_weights: a kernel holder; apply_weights reads layer parameters per call. Not real.",
     [(OMX8, 74)]),
    (OMX8, 83, "input_scale", False, False, False,
     "`layer.input_scale = None`: a None attribute, not a tensor. Not real.",
     [(OMX8, 83)]),
    (OMX8, 84, "weight", False, False, False,
     "replace_parameter target (quantized weight into the kept weight Parameter); copy-back refills the kept object. Not real.",
     [(OMX8, 84)]),
    # 4 quark_w4a16_int4.py
    (QRK, 178, "weight", False, False, False,
     "`layer.weight.data = canonicalize_quark_packed_int4(...)`: a `.data` store on the registered weight, refilled in place by the layerwise copy-back. Not real.",
     [(QRK, 178)]),
    (QRK, 185, "weight_zero_point", False, False, False,
     "`.data` store on the registered zero-point Parameter (asymmetric case), refilled by copy-back. Not real.",
     [(QRK, 185)]),
    (QRK, 170, "kernel", False, False, False,
     "MPLinearKernel holder built in create_weights; the kernel's own stores live in its own file. Not real.",
     [(QRK, 170)]),
    # 5 exllama.py
    (EXL, 103, "qzeros", False, False, False,
     "replace_parameter registers a constant zero-point Parameter `qzeros` in kernel PWAL (symmetric checkpoints have none); on a layerwise reload the kept `qzeros` (registered at initialize) is refilled by copy-back and re-placed, and apply_weights reads it by name each call (:133). A constant, registered and refilled in place. Not real.",
     [(EXL, 103), (EXL, 133)]),
    (EXL, 115, "data", False, False, False,
     "`x.data = x.data.contiguous()` on the scale parameter inside _transform_param; the result goes into the kept registered parameter through replace_parameter. Not real.",
     [(EXL, 115)]),
    (EXL, 77, "w_zp_name", False, False, False,
     "A string (parameter name). Not real.",
     [(EXL, 77)]),
    # 6 flashinfer_cutedsl_moe.py
    (CDSL, 74, "per_token_global_scale", True, False, True,
     "A [1] fp32 constant tensor allocated in the experts' __init__ when per-token activation is on; the experts object is rebuilt by make_nvfp4_moe_kernel in every quant-method PWAL (oracle/nvfp4.py:654, modelopt.py:1108), so each layerwise reload allocates new storage while a captured graph keeps the freed startup address; read by apply as fc2_input_scale (:178, :232). Declared (vllm-cutedsl-nvfp4-per-token-global-scale). Real.",
     [(CDSL, 74), (CDSL, 178), (CDSL, 232), (ONV, 654), (MOPT, 1108)]),
    (CDSL, 65, "gemm1_alpha", False, False, False,
     "A float | None copied from the quant config (model-config constant), passed as swiglu_alpha. Not a tensor. Not real.",
     [(CDSL, 65)]),
    (CDSL, 66, "gemm1_beta", False, False, False,
     "A float | None config constant. Not a tensor. Not real.",
     [(CDSL, 66)]),
    (CDSL, 67, "gemm1_clamp_limit", False, False, False,
     "A float | None config constant. Not a tensor. Not real.",
     [(CDSL, 67)]),
    # 7 compressed_tensors_w8a8_fp8.py
    (CTW8, 177, "weight", False, False, False,
     "replace_parameter target (kept weight Parameter, refilled by copy-back). Not real.",
     [(CTW8, 177)]),
    (CTW8, 180, "weight_scale", False, False, False,
     "replace_parameter target (kept weight_scale Parameter). Not real.",
     [(CTW8, 180)]),
    (CTW8, 186, "input_scale", False, False, False,
     "replace_parameter(layer, 'input_scale', layer.input_scale.max()): the shape changes on the first load (object kept, `.data` rebound); on reload PWAL runs on the temporary and copy-back copy_s the scalar into the kept object. Not real.",
     [(CTW8, 186)]),
    (CTW8, 179, "processed_weight_dims", False, False, False,
     "A Python tuple. Not real.",
     [(CTW8, 179)]),
    (CTW8, 188, "input_scale", False, False, False,
     "`layer.input_scale = None` (dynamic scheme). Not real.",
     [(CTW8, 188)]),
    # 8 compressed_tensors_embedding.py
    (CTEMB, 120, "hidden_size", False, False, False,
     "A Python int; PWAL is `pass` (:157) and embedding reads the registered weight_packed/weight_scale per call (:163). Not real.",
     [(CTEMB, 120), (CTEMB, 157)]),
    # 9 amx_mla.py
    (AMX, 303, "_w_uk_packed", False, True, False,
     "VNNI-packed CPU copy of kv_b_proj's W_UK slice built in the deferred attention PWAL, read by forward_mha (:422) and the decode absorb. CPU only (AMX), so the CPU clause applies: MLAAttention's PWAL then empties the source (mla_attention.py:1250 replace_parameter(kv_b_proj, 'weight', new_empty(0))), so a kernel-format reload of kv_b_proj.weight raises, and so does the layerwise copy-back into the emptied kept parameter (CPU toy (b)); no reload leaves it silently stale. Not real under the v4 CPU clause. Close call: the v7 list judged this key real.",
     [(AMX, 303), (AMX, 422), (MLA, 1250)]),
    (AMX, 304, "_w_uv_packed", False, True, False,
     "As _w_uk_packed, for W_UV (read by forward_mha :477 and MLAAttention._v_up_proj, mla_attention.py:1429). PWAL empties kv_b_proj.weight, so reloads raise rather than go stale (CPU toy (b)). Not real under the CPU clause. Close call: the v3 list judged this key real.",
     [(AMX, 304), (AMX, 477), (MLA, 1250)]),
    (AMX, 275, "_w_scale", False, False, False,
     "Per-tensor dequant scale (FP8 block checkpoints) computed in the deferred attention PWAL on CPU; same CPU-clause reasoning: the source kv_b_proj.weight is emptied, so a reload raises instead of leaving it stale. Not real.",
     [(AMX, 275), (MLA, 1250)]),
    (AMX, 165, "req_to_token", False, False, False,
     "Per-step attention metadata built by the metadata builder, not a weight-derived value and not touched by any reload path. Not real.",
     [(AMX, 165)]),
    # 10 modular_kernel.py
    (MK, 524, "quant_config", True, True, True,
     "FusedMoEExperts.__init__ keeps the FusedMoEQuantConfig it is given; every make_*_moe_kernel call in quant-method PWAL passes the config just built from the layer's scale Parameters (oracle/nvfp4.py:656, oracle/fp8.py:888), and apply reads the scales through it (:767 `return self.quant_config.w1_scale`). After a layerwise reload the experts object is new and its config holds the reload temporaries (copy-back refills the kept parameters), so a later kernel-format reload leaves the experts' scales stale and a captured graph names the startup storage (CPU toy (a), experts' config). A config container on a long-lived experts object whose tensor fields alias reload temporaries: real. Close call: a generic base-class store whose effect depends on the concrete method (the same config object as each method's moe_quant_config store). Declared where a spec declares the config descriptors of the matched experts (owner quant_method.moe_quant_config, the same object), e.g. vllm-cutlass-fp8-quant-config-scales; not for backends no spec targets (Triton, MXFP8).",
     [(MK, 524), (MK, 767), (ONV, 656), (OFP8, 888)]),
    (MK, 525, "activation_config", False, False, False,
     "ApplyMoEActivationConfig holds only Python floats (activation.py:169-173). Not real.",
     [(MK, 525)]),
    (MK, 1102, "fused_experts", False, False, False,
     "Kernel-impl holder of the experts object. Not real.",
     [(MK, 1102)]),
    # 11 oracle/nvfp4.py
    (ONV, 446, "w13_weight_packed", False, False, False,
     "Humming NVFP4: re-aliases the existing w13_weight under the compressed-tensors name for the converter, which replaces all params; no post-load reader reads the alias. Not real.",
     [(ONV, 446)]),
    (ONV, 447, "w2_weight_packed", False, False, False,
     "As w13_weight_packed. Not real.",
     [(ONV, 447)]),
    (ONV, 483, "val", False, False, False,
     "Emulation: moves the module-level constant E2M1 lookup table to the device; on a rerun `.to(device)` of a tensor already there returns the same tensor, so no storage moves. Not real.",
     [(ONV, 483)]),
    # 12 compressed_tensors_moe_w8a8_fp8.py
    (CTMOE, 320, "moe_quant_config", True, False, True,
     "CT W8A8 FP8 MoE rebuilds its quant config in every quant-method PWAL from layer.w13/w2_weight_scale and the input scales (:335-338); on a layerwise reload PWAL runs on the reload temporaries and replace_parameter (:284-285, :313-314) keeps the temporary objects, so the config (and the moe_kernel built from it, :323-324) aliases temporaries after copy-back refills the kept parameters. A later kernel-format reload leaves it stale; a captured graph names the startup storage; read through self.moe_kernel.apply (:383). CPU toy (a), existing-name case, confirms. Declared for the per-tensor FP8 backends the specs target (vllm-cutlass-fp8-quant-config-scales, vllm-fp8-flashinfer-cutlass-per-tensor: owner quant_method.moe_quant_config._w1/_w2/_a1/_a2 scale), not for block or Triton backends. Real.",
     [(CTMOE, 320), (CTMOE, 313), (CTMOE, 335), (CTMOE, 383)]),
    (CTMOE, 323, "moe_kernel", False, False, False,
     "Kernel holder rebuilt in PWAL. Not real.",
     [(CTMOE, 323)]),
    (CTMOE, 313, "w13_weight_scale", False, False, False,
     "replace_parameter target (kept object refilled by copy-back). Not real.",
     [(CTMOE, 313)]),
    (CTMOE, 284, "w13_input_scale", False, False, False,
     "replace_parameter target (max-reduced static input scale into the kept Parameter). Not real.",
     [(CTMOE, 284)]),
    (CTMOE, 254, "w13_input_scale", False, False, False,
     "`layer.w13_input_scale = None` (dynamic activations). Not real.",
     [(CTMOE, 254)]),
    # 13 fbgemm_fp8.py
    (FBG, 146, "input_scale_ub", False, False, False,
     "A registered Parameter (nn.Module __setattr__) holding the config's input_scale_ub, built in create_weights; the layerwise copy-back refills the kept object in place, so under the v4 definition it is not a stale site. Outside the definition: no checkpoint loads it, so a layerwise reload materialises an uninitialised temporary and copies it into the kept parameter (CPU toy (c): 1200.0 becomes garbage) -- a value-corruption hazard, reported separately, not counted. Not real.",
     [(FBG, 146), (FBG, 143)]),
    (FBG, 168, "weight", False, False, False,
     "replace_parameter target (transposed view into the kept weight). Not real.",
     [(FBG, 168)]),
    (FBG, 170, "processed_weight_dims", False, False, False,
     "A Python tuple. Not real.",
     [(FBG, 170)]),
    (FBG, 148, "fp8_linear", False, False, False,
     "Linear kernel holder built in create_weights. Not real.",
     [(FBG, 148)]),
    # 14 Mxfp8LinearKernel.py
    (MXK, 42, "config", False, False, False,
     "Mxfp8LinearLayerConfig: a dataclass of ints. Not real.",
     [(MXK, 42)]),
    # 15 mla_attention.py
    (MLA, 1250, "weight", False, False, False,
     "AMX path: replace_parameter empties kv_b_proj.weight (object kept, `.data` rebound to an empty tensor). Not a stale derived value; it makes later reloads of kv_b_proj raise (CPU toy (b)). Not real.",
     [(MLA, 1250), (MLA, 1251)]),
    (MLA, 1347, "W_UV", False, False, True,
     "replace_parameter target on the deferred attention layer: registered by the first PWAL; on reload the kept Parameter is re-placed before layer.process_weights_after_loading runs on the live tensors, so replace_parameter copy_s in place (same layout), and a kernel-format reload copies into the registered parameter. Declared (vllm-mla-absorbed-kv-b-proj). Not real under v4 (replace_parameter target that keeps the kept object).",
     [(MLA, 1347)]),
    (MLA, 1349, "W_UK_T", False, False, True,
     "As W_UV. Not real.",
     [(MLA, 1349)]),
    (MLA, 1351, "W_UK_T_dcp_qrep", False, False, True,
     "As W_UV (all-gathered W_UK_T, DCP query replication). Not real.",
     [(MLA, 1351)]),
    (MLA, 1295, "W_K", False, False, False,
     "ROCm aiter FP4 BMM: replace_parameter(self, name, tensor) for W_K/W_K_scale/W_V/W_V_scale, copied in place on reload (comment :1287). Not real.",
     [(MLA, 1295), (MLA, 1287)]),
    (MLA, 1312, "W_K", False, False, False,
     "ROCm aiter FP8 BMM: as :1295. Not real.",
     [(MLA, 1312)]),
    (MLA, 750, "kv_cache", False, False, False,
     "KV-cache binding (a view of the runner's cache), not a weight-derived value; no reload path touches it. Not real.",
     [(MLA, 750)]),
    (MLA, 2488, "chunked_prefill_workspace", False, False, False,
     "Metadata-builder workspace allocated once at builder init; not weight-derived and no reload path reallocates it. Not real.",
     [(MLA, 2488)]),
    (MLA, 738, "_quant_fp8_op", False, False, False,
     "A QuantFP8 CustomOp holder (static flags). Not real.",
     [(MLA, 738)]),
]


def main() -> int:
    drawn = DRAW["drawn"]
    keys = earlier_keys()
    cands = []
    for f, ln, attr, real, close, decl, why, quotes in C:
        assert f in drawn, f
        held = not any(k[0] == f and k[1] == attr and abs(k[2] - ln) <= 3 for k in keys)
        cands.append({"file": f, "line": ln, "attr": attr, "real": real, "why": why,
                      "close_call": close, "host_scalar": False, "declared_by_spec": decl,
                      "held_out": held, "quotes": [quote(qf, ql) for qf, ql in quotes]})
    order = {f: i for i, f in enumerate(drawn)}
    cands.sort(key=lambda c: (order[c["file"]], c["line"]))
    real = [c for c in cands if c["real"]]
    out = {
        "seed": DRAW["seed"], "n": DRAW["n"], "vllm": "0.33.0",
        "excluded": {
            "files": [p.name for p in EARLIER],
            "rule": "held_out is false when the same (file, attr) within 3 lines is a candidate of an earlier list (v1..v15b); nothing is removed from the file draw",
        },
        "rules_commit": "3614d96",
        "draw_commit": "6cb5a5c",
        "judge": "review22d (judge D; judged independently of review22e)",
        "definition": "Aligned real-site definition (v4), docs/audit-static-outside-review.md, applied unchanged: real exactly when the published precision judging rule would call the site TP if the audit flagged it: a post-load reader reads the stored value, and layerwise reload_weights or a kernel-format reload after it leaves the value stale or moves storage a captured path reads (aliases of reload temporaries included); CPU-only sites real only when a reload leaves the value stale (not when the source parameter was emptied so a reload raises); a long-lived owner; Python host scalars not real.",
        "command": "python3 tests/resources/static_recall_file_draw.py --population v16 --seed-file tests/resources/static_recall_file_seed_v16.json",
        "toy_checks": "benchmarks/results/review22d/toy_v16d.py (.out): CPU toys with vLLM's own initialize/finalize_layerwise_reload, replace_parameter and get_parameter_for_reload",
        "judged": len(drawn),
        "judged_files": drawn,
        "judged_rule": "every drawn file read in the drawn order; every store on a long-lived object that a post-load reader might read was considered; all 15 files judged (no prefix cut)",
        "lists": {"file_draw_v16_judge_d": {
            "population": DRAW["population"],
            "drawn": drawn,
            "real": len(real),
            "held_out_real": sum(c["held_out"] for c in real),
            "undeclared_real": sum(not c["declared_by_spec"] for c in real),
            "close_call_real": sum(c["close_call"] for c in real),
            "files_with_real": sorted({c["file"] for c in real}, key=order.get),
            "files_without_real": [f for f in drawn if f not in {c["file"] for c in real}],
            "candidates": cands,
        }},
    }
    path = RES / "static_recall_outside_v16d_vllm_0.33.json"
    path.write_text(json.dumps(out, indent=1) + "\n")
    print(path, "real", len(real), "held_out", out["lists"]["file_draw_v16_judge_d"]["held_out_real"],
          "undeclared", out["lists"]["file_draw_v16_judge_d"]["undeclared_real"])
    for c in real:
        print(" ", c["file"], c["line"], c["attr"], "held_out" if c["held_out"] else "not held out",
              "declared" if c["declared_by_spec"] else "undeclared", "CLOSE" if c["close_call"] else "")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
