"""Write the judged v17 file-draw list of judge F (stdlib + vllm only).

Every quote is read from the installed vLLM 0.33.0 file, and each expected substring is
asserted, so a quote always matches the installed line exactly.
"""
import glob
import json
import os

import vllm

SP = os.path.dirname(os.path.dirname(vllm.__file__))
MX = "vllm/model_executor/"
CM = MX + "layers/fused_moe/experts/cutlass_moe.py"
FP8 = MX + "layers/quantization/fp8.py"
OFP8 = MX + "layers/quantization/online/fp8.py"
GPTQ = MX + "layers/quantization/auto_gptq.py"
MXF8 = MX + "layers/quantization/compressed_tensors/compressed_tensors_moe/compressed_tensors_moe_w8a8_mxfp8.py"
NVF4 = MX + "layers/quantization/compressed_tensors/compressed_tensors_moe/compressed_tensors_moe_w4a4_nvfp4.py"
HUM = MX + "kernels/linear/mxfp8/humming.py"


def q(path, line, must):
    text = open(os.path.join(SP, path)).read().splitlines()[line - 1].strip()
    assert must in text, (path, line, must, text)
    return f"{path}:{line} {text}"


def earlier_keys():
    keys = []
    for p in sorted(glob.glob("tests/resources/static_recall_outside_v*_vllm_0.33.json")):
        if "v17" in p:
            continue
        for lst in json.load(open(p))["lists"].values():
            keys += [(c["file"], c["attr"], c["line"]) for c in lst.get("candidates", [])]
    return keys, sorted(os.path.basename(p) for p in glob.glob(
        "tests/resources/static_recall_outside_v*_vllm_0.33.json") if "v17" not in p)


EARLIER, EARLIER_FILES = earlier_keys()


def held_out(f, attr, line):
    return not any(k[0] == f and k[1] == attr and abs(k[2] - line) <= 3 for k in EARLIER)


C = []


def site(f, line, attr, must, real, why, quotes, declared=False, close=False, host=False):
    quotes = [q(f, line, must)] + [q(*x) for x in quotes]
    C.append({"file": f, "line": line, "attr": attr, "real": real, "why": why,
              "close_call": close, "host_scalar": host, "declared_by_spec": declared,
              "held_out": held_out(f, attr, line), "quotes": quotes})


# 1 cutlass_moe.py ------------------------------------------------------------------
FP8X = ("Stride tensor made by torch.full in CutlassExpertsFp8Base.__init__; the experts object "
        "is rebuilt by make_fp8_moe_kernel in every quant-method PWAL (fp8.py:705), so each "
        "layerwise reload allocates new storage while a captured graph keeps the startup address. "
        "Reader: apply passes it to the CUTLASS grouped GEMM (:392-395). Constant-valued, real "
        "under 1-4. Declared (vllm_moe_cutlass.yaml, vllm-cutlass-fp8-strides).")
for ln, a in [(307, "ab_strides1"), (308, "ab_strides2"), (309, "c_strides1"), (310, "c_strides2")]:
    site(CM, ln, a, f"self.{a} =", True, FP8X + (" c_strides2 is the same object as ab_strides1." if a == "c_strides2" else ""),
         [(CM, 392, "self.ab_strides1"), (FP8, 705, "make_fp8_moe_kernel(")], declared=True)
W4X = ("CutlassExpertsW4A8Fp8.__init__ stride tensor (torch.full / torch.zeros) on an experts object "
       "rebuilt in every quant-method PWAL (make_w4a8_moe_kernel), so each layerwise reload moves "
       "it; apply passes it to the CUTLASS W4A8 grouped GEMM (:1458-1465) inside captured graphs. "
       "Declared (vllm_moe_cutlass.yaml, vllm-cutlass-w4a8-strides).")
for ln, a in [(1313, "a_strides1"), (1314, "a_strides2"), (1315, "c_strides1"), (1316, "c_strides2"),
              (1322, "s_strides1"), (1324, "s_strides2")]:
    site(CM, ln, a, f"self.{a} =", True, W4X, [(CM, 1458, "self.a_strides1")], declared=True)
for ln, a in [(1318, "b_strides1"), (1319, "b_strides2")]:
    site(CM, ln, a, f"self.{a} = {a}", True,
         f"The experts keep the quant method's {a}, which compressed_tensors_moe_w4a8_fp8.py "
         "creates anew in every quant-method PWAL (cutlass_encode_and_reorder_int4b_grouped) and "
         "passes through make_w4a8_moe_kernel (oracle/w4a8.py:271); the rebuilt experts object "
         "therefore holds new storage after each layerwise reload while the captured W4A8 GEMM "
         "(:1460-1461) keeps the startup address. Same storage as the v7/v14 quant-method key, "
         "but this (file, attr) store on the experts object is a separate site. Declared "
         "(vllm_moe_w4a8_engine.yaml: alias on quant_method.moe_kernel.fused_experts).",
         [(CM, 1460 if a == "b_strides1" else 1461, f"self.{a}"),
          (MX + "layers/fused_moe/oracle/w4a8.py", 271, "b_strides1=b_strides1")], declared=True)
site(CM, 1310, "out_dtype", "self.out_dtype", False, "A torch dtype, not a tensor. Not real.", [])
site(CM, 708, "w13_weight_scale_2", "layer.w13_weight_scale_2.data.mul_", False,
     "In-place fold (alpha = scale_2 * input_scale) into the registered parameter in experts PWAL; "
     "layerwise reload reruns it once on the fresh temporaries and copy-back refills the kept "
     "object; a kernel-format reload copies already-folded values and runs no PWAL. No new "
     "attribute, registered parameter refilled in place. Not real.", [])

# 2 transform/module.py ----------------------------------------------------------------
TM = MX + "layers/quantization/compressed_tensors/transform/module.py"
site(TM, 54, "weight", "self.weight = SharedWeightParameter", False,
     "The transform's registered SharedWeightParameter, made in __init__ (create_weights time), "
     "not in a post-load step; refilled in place by loading. Not real.", [])
site(TM, 45, "transforms", "self.transforms = transforms", False,
     "Dict of transform scheme/args config tuples (no tensors). Not real.", [])
site(TM, 84, "scaled_data_ptrs", "HadamardTransform.scaled_data_ptrs.add", False,
     "Class-level set of host ints (data_ptr) guarding the one-time 1/sqrt(n) normalisation of the "
     "partition (:83). Not a tensor store. HadamardTransform is in the reload SKIP_MODULES "
     "(reload/meta.py:24), so a layerwise reload does not refill its weight and the rerun PWAL "
     "correctly skips re-scaling. Not real; close because a data_ptr guard never reset would "
     "skip scaling of genuinely reloaded storage if the module were ever reloaded.",
     [(MX + "model_loader/reload/meta.py", 24, "SKIP_MODULES")], close=True)

# 3 fp8.py ------------------------------------------------------------------------------
site(FP8, 702, "moe_quant_config", "self.moe_quant_config = self.get_fused_moe_quant_config(layer)", True,
     "Fp8MoEMethod._init_moe_kernel builds the quant config in every quant-method PWAL (also on "
     "the pre-processed path) from getattr(layer, w13/w2_<scale>) and w13/w2_input_scale "
     "(:770-773), which after replace_parameter on the reload temporaries are the temporaries, "
     "not the kept parameters; make_fp8_moe_quant_config may also allocate fresh a1/a2 gscale "
     "tensors. The experts read it in apply (make_fp8_moe_kernel(moe_quant_config=...) :706, "
     "apply :837). After a layerwise reload it aliases temporaries (graphs keep the startup "
     "storage) and a later kernel-format reload leaves it stale. Real (reference table row 19). "
     "Declared for the static per-tensor FlashInfer/HPC and CUTLASS/Triton paths "
     "(vllm_moe_fp8.yaml, vllm_moe_cutlass.yaml vllm-cutlass-fp8-quant-config-scales); no spec "
     "declares the dynamic/block-quant paths.",
     [(FP8, 706, "moe_quant_config=self.moe_quant_config"), (FP8, 770, "w1_scale = getattr(layer")],
     declared=True)
for ln, a, w in [(795, "bias", "quant_config._w1.bias = w13_bias"), (797, "bias", "quant_config._w2.bias = w2_bias")]:
    site(FP8, ln, a, w, True,
         "Biased MoE (GPT-OSS): the layer's w13/w2_bias Parameter is injected into the quant "
         "config rebuilt in every PWAL. The name is w13_bias/w2_bias, not `bias`, so it is not in "
         "the reload SKIP_TENSORS (reload/meta.py:38) and is a reload temporary during PWAL; "
         "the descriptor keeps the temporary after copy-back. Read by the experts' kernels via "
         "quant_config w1/w2 bias. Real (v6 key); no spec declares the bias descriptors.",
         [(FP8, 792 if ln == 795 else 793, "w13_bias = getattr" if ln == 795 else "w2_bias = getattr"),
          (MX + "model_loader/reload/meta.py", 38, "SKIP_TENSORS")])
site(FP8, 705, "moe_kernel", "self.moe_kernel = make_fp8_moe_kernel(", False,
     "Kernel holder (its experts' stride tensors are judged at cutlass_moe.py). Not real.", [])
site(FP8, 414, "input_scale", "layer.input_scale = None", False, "None placeholder. Not real.", [])
site(FP8, 408, "weight", 'replace_parameter(layer, "weight", weight.data)', False,
     "replace_parameter keeps the registered object (utils.py copy_ or .data rebind); copy-back "
     "refills it. Not real.", [])
site(FP8, 379, "marlin_input_dtype", "self.fp8_linear.marlin_input_dtype", False, "A dtype. Not real.", [])

# 4 quark_w8a8_int8.py --------------------------------------------------------------------
QI = MX + "layers/quantization/quark/schemes/quark_w8a8_int8.py"
site(QI, 88, "kernel", "self.kernel = init_int8_linear_kernel(", False,
     "Kernel holder built in create_weights; the scheme PWAL only drops zero points and delegates "
     "(:155-161). Not real.", [])

# 5 mxfp8/humming.py ---------------------------------------------------------------------
site(HUM, 61, "locks", "self.locks = create_humming_locks", True,
     "New int32 lock workspace on the kernel object in every kernel PWAL (every layerwise "
     "reload); apply_weights passes locks=self.locks (:75) to the captured Humming GEMM, which "
     "keeps the old address. Constant-valued, real under 1-4. v7 key; declared "
     "(vllm_linear_humming.yaml).", [(HUM, 75, "locks=self.locks")], declared=True)
site(HUM, 57, "layer_config", "self.layer_config = prepare_humming_linear_layer_config(", False,
     "Humming layer config (shapes, dtypes, schema), not a tensor (v1 verdict). Not real.", [])
site(HUM, 44, "data", "layer.weight_scale.data =", False,
     "`.data` dtype-view rebind of the registered scale before the humming conversion; registered "
     "parameter refilled by copy-back. Not real (v7 verdict).", [])

# 6 rdna3_hip.py --------------------------------------------------------------------------
RD = MX + "kernels/linear/mxfp4/rdna3_hip.py"
for ln, a in [(137, "weight"), (138, "weight_scale")]:
    site(RD, ln, a, f"layer.{a} = Parameter(", False,
         "Re-registers the layer's own Parameter (nn.Module __setattr__ registers it). That object "
         "is the kept one after first load; layerwise copy-back copies the reprocessed temporary "
         "into it and apply_weights rereads layer.X (:149-150). Not real (v5/v7 verdicts).",
         [(RD, 150, "layer.weight")])

# 7 online/fp8.py -------------------------------------------------------------------------
site(OFP8, 553, "moe_quant_config", "self.moe_quant_config = self.get_fused_moe_quant_config(layer)", True,
     "_Fp8OnlineMoEBase._setup_kernel (all three online FP8 MoE methods) rebuilds the quant config "
     "in every quant-method PWAL from getattr(layer, w13/w2_<scale>) and the biases (:571-582). "
     "Layerwise reload deletes _already_called_process_weights_after_loading and reruns PWAL on "
     "temporaries, so the config then aliases the temporary scale/bias Parameters that "
     "replace_parameter set; the experts read it (make_fp8_moe_kernel(moe_quant_config=...) "
     ":557). A later kernel-format reload leaves it stale. Real, same class as the v14 "
     "online-MXFP4 verdict. Undeclared: the FP8 quant-config specs need a float32 input scale "
     "and online FP8 MoE sets w13/w2_input_scale = None (:628-629).",
     [(OFP8, 557, "moe_quant_config=self.moe_quant_config"), (OFP8, 571, "w1_scale = getattr(layer"),
      (OFP8, 628, "layer.w13_input_scale = None")])
site(OFP8, 249, "weight", 'replace_parameter(layer, "weight", qweight.t().data)', False,
     "Online FP8 linear: replace_parameter registers the FP8 weight at first load (the kept "
     "object); layerwise reload requantizes on temporaries and copies back into it. Not real.", [])
site(OFP8, 258, "_already_called_process_weights_after_loading", "layer._already_called_process_weights_after_loading = True", False,
     "Python flag (deleted by layerwise reload before PWAL). Not real.", [])

# 8 moonep.py -----------------------------------------------------------------------------
ME = MX + "layers/fused_moe/prepare_finalize/moonep.py"
site(ME, 248, "weight_layout", "self.weight_layout = layout", False,
     "Lazy cache of the experts' [E+B] weight layout, never reset. A layerwise reload raises "
     "NotImplementedError in the MoonEP experts conversion (moonep_experts.py:80), and the "
     "layout's gate/down tensors are the registered w13/w2 storage that a kernel-format reload "
     "refills in place. Not real (v8 verdict), close.",
     [(MX + "layers/fused_moe/experts/moonep_experts.py", 80, "raise NotImplementedError(")], close=True)
site(ME, 381, "_plan", "self._plan = plan", False,
     "Per-step dispatch state written in prepare() and cleared in finalize(), not a post-load "
     "store. Not real.", [])

# 9 quark_w8a8_fp8.py -----------------------------------------------------------------------
QF = MX + "layers/quantization/quark/schemes/quark_w8a8_fp8.py"
site(QF, 105, "processed_weight_dims", "layer.processed_weight_dims = (0, 1)", False, "Tuple of ints. Not real.", [])
site(QF, 106, "weight_scale", 'replace_parameter(layer, "weight_scale", max_w_scale)', False,
     "replace_parameter keeps the registered object; copy-back refills it. Not real.", [])

# 10 flashinfer_cutedsl_batched_moe.py -----------------------------------------------------
FC = MX + "layers/fused_moe/experts/flashinfer_cutedsl_batched_moe.py"
site(FC, 57, "w13_weight_scale_2", "layer.w13_weight_scale_2.data.mul_", False,
     "In-place fold into the registered parameter in experts PWAL, rerun once per layerwise "
     "reload on fresh temporaries and copied back; no attribute store. Not real.", [])

# 11 b12x.py ------------------------------------------------------------------------------
B12 = MX + "kernels/linear/mxfp4/b12x.py"
site(B12, 82, "b12x_warmup_provider", "layer.b12x_warmup_provider = self", False,
     "Kernel holder used by warmup only. Not real.", [])
site(B12, 77, "weight_scale", "replace_parameter(", False,
     "Swizzled scale put back into the kept registered parameter (copy_ or .data rebind); "
     "copy-back refills it. Not real.", [])

# 12 transform/linear.py -----------------------------------------------------------------
TL = MX + "layers/quantization/compressed_tensors/transform/linear.py"
site(TL, 122, "input_transform", "self.input_transform = transform", False,
     "Registered HadamardTransform submodule made in create_weights; module holder. Not real.", [])
site(TL, 141, "partition_ranges", "self.partition_ranges = list(", False, "List of int pairs. Not real.", [])

# 13 mxfp4/aiter.py ----------------------------------------------------------------------
AI = MX + "kernels/linear/mxfp4/aiter.py"
site(AI, 206, "use_asm_gemm", "self.use_asm_gemm =", False, "Python bool. Not real.", [])
site(AI, 231, "weight_scale", 'replace_parameter(layer, "weight_scale", weight_scale)', False,
     "Shuffled scale into the kept registered parameter; copy-back refills it. Not real.", [])

# 14 tensorizer_loader.py ----------------------------------------------------------------
TZ = MX + "model_loader/tensorizer_loader.py"
site(TZ, 100, "model_class", "tensorizer_config.model_class = model_class", False,
     "Loader config fields (class, hf_config, dtype); no tensor. Not real.", [])

# 15 auto_gptq.py --------------------------------------------------------------------------
site(GPTQ, 693, "moe_quant_config", "self.moe_quant_config = self.get_fused_moe_quant_config(layer)", True,
     "AutoGPTQMoEMethod._setup_kernel rebuilds the WNA16 quant config in every quant-method PWAL "
     "(both the Marlin/CPU path and the Humming path) from layer.w13_scales/w2_scales, the "
     "qzeros and the biases (:724-733), which replace_parameter / replace_or_register set on the "
     "reload temporaries; the Marlin experts read quant_config.w1_scale in apply "
     "(marlin_moe.py:770 w1_scale=self.w1_scale). After a layerwise reload the config aliases "
     "temporaries, and a later kernel-format reload leaves it stale. Real; no spec declares "
     "the WNA16/Marlin MoE quant config.",
     [(GPTQ, 695, "moe_quant_config=self.moe_quant_config"), (GPTQ, 725, "w1_scale=layer.w13_scales"),
      (MX + "layers/fused_moe/experts/marlin_moe.py", 770, "w1_scale=self.w1_scale")])
site(GPTQ, 686, "w13_weight", "layer.w13_weight = layer.w13_qweight", False,
     "Registered Parameter under a second name (v1 verdict); copy-back refills the kept object. Not real.", [])
site(GPTQ, 490, "input_dtype", "layer.input_dtype = self.input_dtype", False, "A dtype. Not real.", [])

# 16 mixed_precision/cpu.py -------------------------------------------------------------
CP = MX + "kernels/linear/mixed_precision/cpu.py"
site(CP, 141, "data", "packed_weight.data = blocked_w", False,
     "CPU only. `.data` rebind of the registered packed weight; copy-back refills the kept object "
     "and apply_weights rereads it (:190). CPU clause: not real.", [])
site(CP, 73, "isa_hint", "layer.isa_hint = isa_hint", False, "A string. Not real.", [])
site(CP, 172, "use_w4a8", "layer.use_w4a8 = (", False, "A bool. Not real.", [])

# 17 mxfp4/pytorch.py ----------------------------------------------------------------------
PT = MX + "kernels/linear/mxfp4/pytorch.py"
site(PT, 42, "weight", 'replace_parameter(layer, "weight", weight.data.t())', False,
     "XPU. replace_parameter keeps the registered object (.data rebind for the transposed "
     "layout); copy-back refills it. Not real.", [])

# 18 compressed_tensors_moe_w8a8_mxfp8.py ------------------------------------------------
site(MXF8, 134, "moe_quant_config", "self.moe_quant_config = self.get_fused_moe_quant_config(layer)", True,
     "The MXFP8 MoE quant config is rebuilt in every quant-method PWAL from layer.w13/w2_weight_scale "
     "(:150-151), which replace_parameter (:131-132) sets on the reload temporaries; the experts "
     "read it (make_fp8_moe_kernel(moe_quant_config=...) :138). After a layerwise reload it "
     "aliases temporaries and a later kernel-format reload leaves it stale. Real. Undeclared: "
     "the FP8 quant-config specs target float8_e4m3fn per-tensor with a float32 input scale; "
     "MXFP8 has e8m0 block scales and input scales None (:112-113).",
     [(MXF8, 138, "moe_quant_config=self.moe_quant_config"), (MXF8, 150, "w1_scale=layer.w13_weight_scale")])
site(MXF8, 116, "weight_block_size", "layer.weight_block_size = self.weight_block_size", False, "List of ints. Not real.", [])

# 19 nvfp4/base.py --------------------------------------------------------------------------
NB = MX + "kernels/linear/nvfp4/base.py"
site(NB, 36, "config", "self.config = config", False,
     "Kernel layer config (shapes, dtypes), set in __init__, no tensor. Not real.", [])

# 20 compressed_tensors_moe_w4a4_nvfp4.py -----------------------------------------------------
for ln, a in [(264, "w13_input_scale"), (265, "w2_input_scale")]:
    site(NVF4, ln, a, f"layer.{a} =", True,
         f"Plain (unregistered) tensor attribute: the converted activation scale (1/input global "
         "scale, or its max) set anew in every PWAL; read through the quant config "
         "(get_fused_moe_quant_config a13/a2_scale :286-287) by the captured experts. New storage "
         "each layerwise reload. Real (v2/v3 key); declared (vllm_moe_nvfp4.yaml, "
         "vllm-compressed-tensors-nvfp4-input-scales-*).",
         [(NVF4, 286 if a == "w13_input_scale" else 287, "a13_scale" if a == "w13_input_scale" else "a2_scale")], declared=True)
site(NVF4, 268, "moe_quant_config", "self.moe_quant_config = self.get_fused_moe_quant_config(layer)", True,
     "NVFP4 quant config rebuilt in every PWAL: fresh a1/a2 gscales and aliases of reload "
     "temporaries (w13_weight_scale_2 etc.); read by the experts (:271). Real (v1 key); declared "
     "(vllm_moe_nvfp4.yaml, vllm-nvfp4-moe-quant-config).",
     [(NVF4, 271, "moe_quant_config=self.moe_quant_config")], declared=True)
site(NVF4, 213, "w13_weight", "layer.w13_weight = torch.nn.Parameter(", False,
     "Registered Parameter (rename of the packed weight), kept by replace_parameter and refilled "
     "by copy-back (v7 verdict). Not real.", [])

if __name__ == "__main__":
    draw = json.load(open("tests/resources/static_recall_file_v17_draw.json"))
    order = {f: i for i, f in enumerate(draw["drawn"])}
    for c in C:
        assert c["file"] in order or not c["real"] or True
    judged = [c for c in C if c["file"] in order]
    judged.sort(key=lambda c: (order[c["file"]], c["line"]))
    real = [c for c in judged if c["real"]]
    files_with_real = sorted({c["file"] for c in real}, key=order.get)
    out = {
        "seed": draw["seed"], "n": draw["n"], "vllm": "0.33.0",
        "excluded": {"files": EARLIER_FILES,
                     "rule": "held_out is false when the same (file, attr) within 3 lines is a "
                             "candidate of an earlier list static_recall_outside_v*_vllm_0.33.json "
                             "(v1..v16e); nothing is removed from the file draw"},
        "rules_commit": "3614d96", "draw_rules_commit": "3e313b0",
        "judge": "review22f (judge F of two; the other judge's work was not read)",
        "definition": "Aligned real-site definition (v4), docs/audit-static-outside-review.md, applied unchanged.",
        "command": "python3 tests/resources/static_recall_file_draw.py --population v17 --seed-file tests/resources/static_recall_file_seed_v17.json",
        "judged": len(draw["drawn"]),
        "judged_files": draw["drawn"],
        "judged_rule": "every drawn file read in the drawn order; every store on a long-lived object "
                       "that a post-load reader might read was considered; all 20 files judged "
                       "(no prefix cut); near-misses recorded as not real",
        "lists": {"file_draw_v17_judge_f": {
            "population": draw["population"], "drawn": draw["drawn"],
            "real": len(real),
            "held_out_real": sum(c["held_out"] for c in real),
            "undeclared_real": sum(not c["declared_by_spec"] for c in real),
            "files_with_real": files_with_real,
            "files_without_real": [f for f in draw["drawn"] if f not in files_with_real],
            "candidates": judged}},
    }
    json.dump(out, open("tests/resources/static_recall_outside_v17f_vllm_0.33.json", "w"), indent=1)
    open("tests/resources/static_recall_outside_v17f_vllm_0.33.json", "a").write("\n")
    print(len(judged), "entries;", len(real), "real;", out["lists"]["file_draw_v17_judge_f"]["held_out_real"],
          "held out;", out["lists"]["file_draw_v17_judge_f"]["undeclared_real"], "undeclared")
    for c in real:
        print(c["file"].split("/")[-1], c["line"], c["attr"], "HO" if c["held_out"] else "", "decl" if c["declared_by_spec"] else "undecl")
