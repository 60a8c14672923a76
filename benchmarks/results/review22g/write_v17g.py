"""Write tests/resources/static_recall_outside_v17g_vllm_0.33.json (review22g, judge G).

Quotes are read from the installed vLLM 0.33.0 files, so each `quotes` entry matches the
installed line exactly. held_out is computed: false when the same (file, attr) within 3 lines is
a candidate of an earlier list static_recall_outside_v*_vllm_0.33.json (v1..v16e).
Run from the worktree root: python3 benchmarks/results/review22g/write_v17g.py
"""
import glob
import json
import os

import vllm

SITE = os.path.dirname(os.path.dirname(vllm.__file__))
OUT = "tests/resources/static_recall_outside_v17g_vllm_0.33.json"
DRAW = json.load(open("tests/resources/static_recall_file_v17_draw.json"))
D = DRAW["drawn"]
_cache = {}


def line(path, n):
    if path not in _cache:
        _cache[path] = open(os.path.join(SITE, path)).read().splitlines()
    return _cache[path][n - 1].strip()


def q(path, n):
    return f"{path}:{n} {line(path, n)}"


def cands(o):
    if isinstance(o, dict):
        if "file" in o and "attr" in o and "line" in o:
            yield o
        else:
            for v in o.values():
                yield from cands(v)
    elif isinstance(o, list):
        for v in o:
            yield from cands(v)


EARLIER = sorted(
    f for f in glob.glob("tests/resources/static_recall_outside_v*_vllm_0.33.json")
    if "v17" not in f
)
PRIOR = [c for f in EARLIER for c in cands(json.load(open(f)))]


def held_out(path, ln, attr):
    return not any(
        c["file"] == path and c["attr"] == attr and abs(int(c["line"]) - ln) <= 3 for c in PRIOR
    )


P = {
    "cutlass": "vllm/model_executor/layers/fused_moe/experts/cutlass_moe.py",
    "w4a8ct": "vllm/model_executor/layers/quantization/compressed_tensors/compressed_tensors_moe/compressed_tensors_moe_w4a8_fp8.py",
    "marlin": "vllm/model_executor/layers/fused_moe/experts/marlin_moe.py",
    "layerwise": "vllm/model_executor/model_loader/reload/layerwise.py",
    "unq": "vllm/model_executor/layers/fused_moe/oracle/unquantized.py",
}
for i, f in enumerate(D, 1):
    P[i] = f

# (file key, line, attr, real, close_call, declared_by_spec, host_scalar, why, [(file key, line), ...])
J = []


def add(fk, ln, attr, real, why, refs=(), close=False, declared=False, host=False):
    J.append((fk, ln, attr, real, close, declared, host, why, list(refs)))


# 1 cutlass_moe.py
for ln, attr in [(307, "ab_strides1"), (308, "ab_strides2"), (309, "c_strides1"), (310, "c_strides2")]:
    add(1, ln, attr, True,
        f"CUTLASS FP8 experts stride table ({attr}) made by torch.full in CutlassExpertsFp8Base.__init__ "
        "(:301-303); every quant-method PWAL builds a new modular kernel and so new experts, so each "
        "layerwise reload makes new storage while a captured graph keeps the startup address; read by "
        "apply (:392-395). Real.", [(1, {307: 302, 308: 303, 309: 304, 310: 302}[ln]),
                                     (1, {307: 392, 308: 393, 309: 394, 310: 395}[ln])], declared=True)
for ln, attr, extra in [(1313, "a_strides1", 1458), (1314, "a_strides2", 1459),
                        (1315, "c_strides1", 1462), (1316, "c_strides2", 1463),
                        (1322, "s_strides1", 1464), (1324, "s_strides2", 1465)]:
    add(1, ln, attr, True,
        f"CUTLASS W4A8 experts stride table ({attr}) allocated in CutlassExpertsW4A8Fp8.__init__; the "
        "compressed-tensors W4A8 PWAL builds a new kernel (new experts) on every rerun, so storage moves "
        "under the captured graph; read by apply. Real.", [(1, extra)], declared=True)
for ln, attr, extra in [(1318, "b_strides1", 1460), (1319, "b_strides2", 1461)]:
    add(1, ln, attr, True,
        f"The experts keep the quant method's {attr} (returned by cutlass_encode_and_reorder_int4b_grouped "
        "in every quant-method PWAL, w4a8 oracle :166/:173, passed through make_w4a8_moe_kernel); new "
        "storage on each reload rerun, read by apply into the captured CUTLASS W4A8 kernel. Same tensor "
        "as v14's compressed_tensors_moe_w4a8_fp8.py:162-163 keys, here on the experts object. Real.",
        [(1, extra), (P["w4a8ct"], 192 if ln == 1318 else 193)], declared=True)
add(1, 306, "out_dtype", False, "A torch dtype, not a tensor. Not real.", [])
add(1, 1327, "group_size", False, "Python int. Not real.", [])

# 2 transform/module.py
add(2, 84, "scaled_data_ptrs", False,
    "Class-level set of data_ptr ints guarding the one-time in-place div_ of the shared Hadamard "
    "partition (:81-84), never reset. It is a Python set of ints, not a tensor store; the partition "
    "itself is a SharedWeightParameter registered in __init__ (:54) and refilled in place. Whether a "
    "reload that lands on a recycled address skips the normalization is a value question of the "
    "in-place PWAL, not an attribute store of a tensor. Not real (close call).",
    [(2, 82), (2, 54)], close=True)
add(2, 45, "transforms", False, "Transform config dict (scheme/args), not a tensor. Not real.", [])

# 3 fp8.py
add(3, 702, "moe_quant_config", True,
    "Fp8MoEMethod._init_moe_kernel rebuilds the MoE quant config in every quant-method PWAL "
    "(process_weights_after_loading :713 -> _setup_kernel :765 -> _init_moe_kernel :700) from the scale Parameters just replace_parameter'd (:695-696, read at "
    ":770-773). On a layerwise reload PWAL runs on the reload temporaries, so the config (and the "
    "experts built from it, :705) alias temporaries, not the kept Parameters copy-back refills; a later "
    "kernel-format reload leaves it stale. Reader: self.moe_kernel.apply (:841). CPU toy "
    "benchmarks/results/review22g/toy_v17g.out (same-dtype replace_parameter). Real. Declared by "
    "vllm_moe_cutlass.yaml vllm-cutlass-fp8-quant-config-scales and vllm_moe_fp8.yaml (owner "
    "quant_method.moe_quant_config), for the static per-tensor configurations.",
    [(3, 765), (3, 695), (3, 770), (3, 841)], declared=True)
for ln, attr, src in [(795, "bias", "w13_bias"), (797, "bias", "w2_bias")]:
    add(3, ln, attr, True,
        f"get_fused_moe_quant_config, called by _init_moe_kernel in every quant-method PWAL, stores the "
        f"layer's {src} on the fresh quant-config descriptor (biased MoE, e.g. GPT-OSS). On a layerwise "
        "reload PWAL runs on the reload temporaries, so the descriptor and the experts built from it hold "
        "the temporary bias, not the kept Parameter copy-back refills; a later kernel-format reload leaves "
        "it stale. Reader: Triton experts B_bias=self.w1_bias (triton_moe.py:457). Real through the "
        "temporary-alias clause only (close call, as v6). No spec declares the MoE bias descriptors.",
        [(3, 702), ("vllm/model_executor/layers/fused_moe/experts/triton_moe.py", 457)], close=True)
add(3, 705, "moe_kernel", False, "Modular kernel holder; its tensors are the experts' and config's sites. Not real.", [])
add(3, 414, "input_scale", False, "Python None stamp. Not real.", [])
add(3, 369, "marlin_input_dtype", False, "A dtype on the kernel. Not real.", [])
add(3, 408, "weight", False, "replace_parameter target: kept Parameter refilled by copy-back. Not real.", [])

# 4 quark_w8a8_int8.py
add(4, 88, "kernel", False,
    "Int8 linear kernel holder built in create_weights; PWAL only drops zero-point parameters (:155-159) "
    "and delegates. No tensor store on a long-lived object in this file. Not real.", [(4, 161)])

# 5 mxfp8/humming.py
add(5, 61, "locks", True,
    "create_humming_locks allocates a new int32 workspace on the kernel in every kernel PWAL (every "
    "layerwise reload), read by apply_weights (:75) inside captured graphs. Real.", [(5, 75)], declared=True)
add(5, 60, "compute_config", False, "A JSON string (get_humming_linear_compute_config). Not real.", [])
add(5, 57, "layer_config", False, "Humming layer config of shapes/dtypes, not a tensor (v1 verdict). Not real.", [])
add(5, 44, "data", False, "`.data` dtype view of the registered weight_scale. Not real.", [])

# 6 mxfp4/rdna3_hip.py
add(6, 137, "weight", False,
    "Re-registers the weight Parameter under the same name (contiguous copy); copy-back refills the "
    "kept Parameter, apply_weights reads layer.weight each call (:150). Not real.", [(6, 150)])
add(6, 138, "weight_scale", False, "As weight: registered Parameter under the same name. Not real.", [])

# 7 online/fp8.py
add(7, 553, "moe_quant_config", True,
    "Online FP8 MoE (_Fp8OnlineMoEBase._setup_kernel, called from every quant-method PWAL) rebuilds the "
    "quant config from the scales just replace_parameter'd (:550-551, read at :571-572); on a layerwise "
    "reload these are the reload temporaries, so the config and the kernel built from it (:556) alias "
    "temporaries and a later kernel-format reload leaves it stale (same verdict as v14's "
    "online/mxfp4.py:253). Real. Undeclared: the FP8 quant-config specs gate on "
    "w13_input_scale.dtype float32 / g1_alphas, and online methods set the input scales to None (:628).",
    [(7, 648), (7, 550), (7, 571), (7, 628)])
add(7, 556, "moe_kernel", False, "Modular kernel holder. Not real.", [])
add(7, 258, "_already_called_process_weights_after_loading", False, "Python flag. Not real.", [])
add(7, 249, "weight", False, "Online linear replace_parameter target (kept object refilled). Not real.", [])
add(7, 227, "fp8_linear", False, "Linear kernel holder built in create_weights. Not real.", [])

# 8 prepare_finalize/moonep.py
add(8, 248, "weight_layout", False,
    "Lazy cache of the experts' [E+B] layout (guard :245, never reset), read for weight prefetch "
    "(:387). A layerwise reload raises in the MoonEP conversion (unquantized oracle :447) and under a "
    "kernel-format reload gate/down share storage with the registered w13/w2 (refilled in place); the "
    "unregistered up copy has no runtime name. Same verdict as v5/v8. Not real (close call).",
    [(8, 245), (8, 387), (P["unq"], 447)], close=True)
add(8, 382, "_cu_seqlens", False, "Per-step dispatch state rewritten by every prepare() and cleared in finalize. Not real.", [(8, 429)])
add(8, 381, "_plan", False, "Per-step dispatch plan, rewritten each prepare(). Not real.", [])

# 9 quark_w8a8_fp8.py
add(9, 105, "processed_weight_dims", False, "Tuple of ints. Not real.", [])
add(9, 103, "weight", False, "replace_parameter target (kept Parameter). Not real.", [])
add(9, 196, "fp8_linear", False, "Linear kernel holder built in create_weights. Not real.", [])

# 10 flashinfer_cutedsl_batched_moe.py
add(10, 52, "use_deep_ep_ll_nvfp4_dispatch", False,
    "Python bool. The experts' PWAL (:57-58) mul_s in place into the registered scale_2 Parameters "
    "(no attribute store). No real site in this file.", [(10, 57)])

# 11 mxfp4/b12x.py
add(11, 77, "weight_scale", False, "replace_parameter target (kept Parameter refilled by copy-back). Not real.", [])
add(11, 82, "b12x_warmup_provider", False, "The kernel object itself (a holder), not a tensor. Not real.", [])

# 12 transform/linear.py
add(12, 122, "input_transform", False,
    "Registered HadamardTransform submodule made once in create_weights; its weight is a registered "
    "parameter. A holder. Not real.", [])
add(12, 141, "partition_ranges", False, "List of int pairs. Not real.", [])

# 13 mxfp4/aiter.py
add(13, 206, "use_asm_gemm", False, "Python bool. Not real.", [])
add(13, 231, "weight_scale", False, "replace_parameter target. Not real.", [])

# 14 tensorizer_loader.py
add(14, 127, "tensorizer_uri", False, "A string on the loader config. Not real.", [])
add(14, 49, "tensorizer_config", False, "Loader config, no tensors. Not real.", [])

# 15 auto_gptq.py
add(15, 693, "moe_quant_config", True,
    "AutoGPTQMoEMethod._setup_kernel, run by every quant-method PWAL (:689), builds the GPTQ-Marlin "
    "MoE quant config from layer.w13_scales/w2_scales (:725-726), which PWAL just replace_parameter'd "
    "(:676-677, same dtype, transposed shape). On a layerwise reload these are reload temporaries, so "
    "the config and the experts built from it (:694) alias temporaries; a later kernel-format reload "
    "leaves the config's scales stale. Reader: MarlinExperts pass self.w1_scale to the kernel "
    "(marlin_moe.py:770) via self.moe_kernel.apply (:746). CPU toy "
    "benchmarks/results/review22g/toy_v17g.out (transposed case). Real; no spec declares a WNA16/GPTQ "
    "MoE quant config.",
    [(15, 676), (15, 725), (15, 746), (P["marlin"], 770)])
add(15, 610, "w13_input_global_scale", False,
    "replace_or_register: a Parameter registered by PWAL when the name is new (else replace_parameter); "
    "the layerwise copy-back refills the kept registered object (v14 toy, scale created by PWAL). "
    "Not real.", [(15, 608)])
add(15, 694, "moe_kernel", False, "Modular kernel holder. Not real.", [])
add(15, 686, "w13_weight", False, "Registered Parameter aliased under a second name (v1/v7 verdict). Not real.", [])
add(15, 687, "w2_weight", False, "As w13_weight. Not real.", [])
add(15, 431, "kernel", False, "Linear kernel holder (create_weights). Not real.", [])

# 16 mixed_precision/cpu.py
add(16, 155, "data", False, ".data rebind of the registered weight (CPU); refilled in place (v4 verdict). Not real.", [])
add(16, 73, "isa_hint", False, "A string. Not real.", [])
add(16, 172, "use_w4a8", False, "Python bool. Not real.", [])
add(16, 105, "weight_zp", False,
    "CPU-only W4A8 path: replace_parameter of a constant fake zero point (ones * c); CPU only, the "
    "reader re-reads the layer attribute each call (:190) and the value is constant, so no reload "
    "leaves it stale. Not real.", [(16, 190)])

# 17 mxfp4/pytorch.py
add(17, 42, "weight", False, "replace_parameter targets (weight, weight_scale). Not real.", [])

# 18 compressed_tensors_moe_w8a8_mxfp8.py
add(18, 134, "moe_quant_config", True,
    "Compressed-tensors W8A8 MXFP8 MoE rebuilds its quant config in every quant-method PWAL from "
    "layer.w13/w2_weight_scale (:150-151), just replace_parameter'd (:131-132). On a layerwise reload "
    "these are reload temporaries, so the config and the kernel built from it (:137) alias temporaries; "
    "a later kernel-format reload leaves it stale. Reader: self.moe_kernel.apply (:196). Real. "
    "Undeclared: no spec covers the MXFP8 MoE quant config (the FP8 ones gate on per-tensor float32 "
    "input scales; this method sets them to None, :112).",
    [(18, 131), (18, 150), (18, 196)])
add(18, 137, "moe_kernel", False, "Modular kernel holder. Not real.", [])
add(18, 116, "weight_block_size", False, "List of ints. Not real.", [])

# 19 nvfp4/base.py
add(19, 36, "config", False, "Empty NvFp4LinearLayerConfig dataclass on the kernel, no tensors. Not real.", [])

# 20 compressed_tensors_moe_w4a4_nvfp4.py
add(20, 264, "w13_input_scale", True,
    "Plain (unregistered) tensor attribute a13_scale from convert_to_nvfp4_moe_kernel_format, new on "
    "every PWAL, read through the quant config (:286) by the experts; storage moves under the captured "
    "graph. Real.", [(20, 286)], declared=True)
add(20, 265, "w2_input_scale", True, "As w13_input_scale for w2 (:287). Real.", [(20, 287)], declared=True)
add(20, 268, "moe_quant_config", True,
    "NVFP4 quant config rebuilt in every PWAL from the new plain input scales and the replaced scale "
    "Parameters (aliases of reload temporaries; fresh gscales). Reader: self.moe_kernel (:270). Real.",
    [(20, 282), (20, 330)], declared=True)
add(20, 213, "w13_weight", False, "Registered Parameter rename of the packed weight; replace_parameter keeps it (v7). Not real.", [])
add(20, 218, "w2_weight", False, "As w13_weight. Not real.", [])
add(20, 270, "moe_kernel", False, "Modular kernel holder. Not real.", [])

cands_out = []
for fk, ln, attr, real, close, declared, host, why, refs in J:
    path = P[fk]
    quotes = [q(path, ln)] + [q(P.get(r[0], r[0]), r[1]) for r in refs]
    cands_out.append({
        "file": path, "line": ln, "attr": attr, "real": real, "why": why,
        "close_call": close, "host_scalar": host, "declared_by_spec": declared,
        "held_out": held_out(path, ln, attr), "quotes": quotes,
    })

judged = list(D)  # all 20, in drawn order
real = [c for c in cands_out if c["real"]]
with_real = sorted({c["file"] for c in real}, key=D.index)
doc = {
    "seed": DRAW["seed"], "n": DRAW["n"], "vllm": "0.33.0",
    "excluded": {"files": [os.path.basename(f) for f in EARLIER],
                 "rule": "held_out is false when the same (file, attr) within 3 lines is a candidate of an earlier list (v1..v16e); nothing is removed from the file draw"},
    "rules_commit": "3614d96", "draw_commit": "4855562",
    "judge": "review22g (judge G; judged independently of review22f)",
    "definition": "Aligned real-site definition (v4), docs/audit-static-outside-review.md, applied unchanged: real exactly when the published precision judging rule would call the site TP if the audit flagged it: a post-load reader reads the stored value, and layerwise reload_weights or a kernel-format reload after it leaves the value stale or moves storage a captured path reads (aliases of reload temporaries included); CPU-only sites real only when a reload leaves the value stale; a long-lived owner; Python host scalars not real.",
    "command": "python3 tests/resources/static_recall_file_draw.py --population v17 --seed-file tests/resources/static_recall_file_seed_v17.json",
    "toy_checks": "benchmarks/results/review22g/toy_v17g.py (.out): CPU toy with vLLM's own record_metadata_for_reloading, initialize/finalize_layerwise_reload, replace_parameter and get_parameter_for_reload",
    "judged": len(judged), "judged_files": judged,
    "judged_rule": "every drawn file read in the drawn order; every store on a long-lived object that a post-load reader might read was considered; all 20 files judged (no prefix cut)",
    "lists": {"file_draw_v17_judge_g": {
        "population": DRAW["population"], "drawn": D,
        "real": len(real),
        "held_out_real": sum(c["held_out"] for c in real),
        "undeclared_real": sum(not c["declared_by_spec"] for c in real),
        "close_call_real": sum(c["close_call"] for c in real),
        "files_with_real": with_real,
        "files_without_real": [f for f in D if f not in with_real],
        "candidates": cands_out,
    }},
}
with open(OUT, "w") as fh:
    json.dump(doc, fh, indent=1)
    fh.write("\n")
print(OUT, "real", len(real), "held_out", doc["lists"]["file_draw_v17_judge_g"]["held_out_real"],
      "undeclared", doc["lists"]["file_draw_v17_judge_g"]["undeclared_real"])
for c in real:
    print(" ", c["file"].split("/")[-1], c["line"], c["attr"], "held_out" if c["held_out"] else "", "" if c["declared_by_spec"] else "undeclared")
