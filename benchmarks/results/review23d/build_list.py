"""Build tests/resources/static_recall_outside_v18d_vllm_0.33.json from the judgements below.

Quotes are read from the installed vLLM 0.33.0 files (so each matches the source exactly);
held_out is computed from the earlier lists static_recall_outside_v*_vllm_0.33.json (a key is
not held out when the same (file, attr) within 3 lines is a candidate of an earlier list).
"""
import glob
import json
import os

import vllm

SP = os.path.dirname(os.path.dirname(vllm.__file__))
DRAW = "tests/resources/static_recall_file_v18_draw.json"
OUT = "tests/resources/static_recall_outside_v18d_vllm_0.33.json"

M = "vllm/model_executor/"
Q = M + "layers/quantization/"
CT = Q + "compressed_tensors/"
F = {
    1: M + "kernels/linear/mxfp8/deep_gemm.py",
    2: CT + "schemes/compressed_tensors_w4a4_nvfp4.py",
    3: CT + "schemes/compressed_tensors_w8a16_fp8.py",
    4: CT + "schemes/compressed_tensors_wNa8.py",
    5: Q + "online/lm_head.py",
    6: M + "offloader/prefetch.py",
    7: M + "kernels/linear/scaled_mm/aiter.py",
    8: Q + "quark/schemes/quark_ocp_mx.py",
    9: M + "kernels/linear/mxfp4/flashinfer.py",
    10: M + "kernels/linear/mxfp6/base.py",
    11: Q + "moe_wna16.py",
    12: "vllm/v1/worker/gpu/model_runner.py",
    13: CT + "schemes/compressed_tensors_w4a8_int.py",
    14: CT + "compressed_tensors.py",
    15: M + "kernels/linear/mxfp8/b12x.py",
    16: M + "kernels/linear/scaled_mm/zentorch.py",
    17: CT + "schemes/compressed_tensors_w8a8_mxfp8.py",
    18: M + "layers/fused_moe/router/gate_linear.py",
    19: Q + "quark/quark.py",
    20: M + "layers/fused_moe/experts/zentorch_moe.py",
}
RELOAD = M + "model_loader/reload/layerwise.py"

# (file no, line, attr, real, close_call, declared_by_spec, host_scalar, why, extra quotes [(path, line)])
J = [
    (1, 60, "weight", False, False, False, False,
     "replace_parameter target (DeepGEMM BMM repack of weight and weight_scale): the kept Parameter is refilled in place by layerwise copy-back; apply_weights reads layer.weight on each call (:83). Not real.",
     [(1, 83)]),
    (1, 62, "weight_block_size", False, False, False, False,
     "A Python list constant [1, 32] on the layer, not a tensor. Not real.", []),
    (2, 97, "weight", False, False, False, False,
     "Rename of the registered weight_packed Parameter to `weight` (then `del layer.weight_packed`): the kept registered Parameter is refilled by copy-back. Not real (a v6 key).", []),
    (2, 132, "input_global_scale_inv", False, False, False, False,
     "replace_parameter target (a new name on the first PWAL, registered on the layer, so present at reload initialize and refilled in place by copy-back). Not real.", []),
    (2, 133, "alpha", False, False, False, False,
     "replace_parameter target (alpha = input_global_scale * weight_global_scale), registered on the layer and refilled in place by copy-back; the scheme's kernel reads it from the layer on each call. Not real.", [(2, 146)]),
    (3, 130, "weight_scale_inv", False, False, False, False,
     "Block path renames weight_scale to weight_scale_inv through replace_parameter: a registered Parameter refilled in place by copy-back. Not real.", []),
    (3, 143, "weight_quant_key", False, False, False, False,
     "A QuantKey written into the kernel config, not a tensor. Not real (v3/v7 key).", []),
    (3, 146, "weight", False, False, False, False,
     "replace_parameter with the transposed view `layer.weight.t()`: the kept Parameter (a view of its own storage) is refilled in place by copy-back. Not real.", []),
    (3, 148, "processed_weight_dims", False, False, False, False,
     "A Python tuple (0, 1) on the layer, not a tensor. Not real (a v4 key).", []),
    (4, 170, "_humming_input_quant_config", False, False, False, False,
     "A dict of ints and strings set in create_weights, no tensor. Not real.", []),
    (4, 254, "kernel", False, False, False, False,
     "The MP linear kernel object itself (a holder); PWAL delegates to it (:262). Not real.", [(4, 262)]),
    (5, 71, "weight", False, True, False, False,
     "The quantized lm_head copy's packed weight (and :72-73 scales), a replace_parameter target on the copy. The copy is derived from the target lm_head weight, but it is re-derived in place after every reload: GPUModelRunner.reload_weights calls reset_lora_state (model_runner.py:598), which calls refresh_quantized_lm_heads (model_runner.py:584), which copies a fresh copy's parameters into the kept ones (:169). Not real. Close call: only the v2 GPU runner creates and refreshes these copies, and kernel-side plain attributes of the copy (other files) are not refreshed by :169.",
     [(5, 169), (12, 584), (12, 598)]),
    (5, 74, "kernel", False, False, False, False,
     "The NVFP4 linear kernel object (a holder). Not real.", [(5, 80)]),
    (5, 116, "weight", False, False, False, False,
     "A new Parameter sharing the source head's storage (a view of kept storage) on a head whose PWAL then replaces it. Not real (a v12 key).", []),
    (5, 189, "head", False, False, False, False,
     "setattr swapping a module (the source head) in and out during a weight update; a module holder, not a tensor. Not real.", []),
    (6, 661, "_cpu_storage", True, True, False, False,
     "Prefetch CPU offloading: the CPU master copy of an offloaded weight, allocated while the model is built; param.data points at it so loading fills it (:677), and post_init keeps it (:707) or re-pins it (:705). Reader: every prefetch copies it into the shared static GPU slot that the parameter points at (:563, recorded into CUDA graphs via the event fork). Both reload paths write the new weights into the kept parameter, i.e. the slot (:742), and nothing refreshes _cpu_storage, so the next prefetch restores the old weights (CPU toy benchmarks/results/review23d/toy_prefetch_cpu_storage.out). Real. Close call: layerwise reload documents CPU offloading as not composed (reload/__init__.py), and this store is the allocation. A v12 key.",
     [(6, 677), (6, 553), (6, 563), (6, 742)]),
    (6, 705, "_cpu_storage", True, True, False, False,
     "post_init (sync_cpu_storage / assign_static_buffer) re-pins the processed weight into a new pinned CPU tensor and stores it as the prefetch source. Reader: start_onload_to_static copies it into the static GPU slot on every prefetch (:553, :563), a path CUDA graphs capture. The parameter then points at the slot (:742); a reload (layerwise copy-back or kernel-format copy_) refills the slot but never this CPU copy, and the next prefetch overwrites the slot with the old weights. Model-level post_init (offloader) is not rerun on reload. Real (CPU toy: toy_prefetch_cpu_storage.out). Close call: same mechanism as the v12 key :661, a different store.",
     [(6, 553), (6, 563), (6, 742)]),
    (6, 707, "_cpu_storage", True, True, False, False,
     "post_init keeps the processed CPU param.data as the prefetch source when it is already pinned (or pinning is off). After :742 the parameter points at the static GPU slot and this tensor is no longer the parameter's storage; a reload refills the slot only, so the next prefetch (:563) copies the stale weights back. Real (CPU toy with the unpinned branch: toy_prefetch_cpu_storage.out). Close call: as :705.",
     [(6, 563), (6, 742)]),
    (6, 739, "_gpu_buffer", False, False, False, False,
     "The static GPU slot that the parameter itself points at (:742): it is the kept parameter's storage, allocated once and refilled in place by a reload. Not real.", [(6, 742)]),
    (6, 365, "buffer_pool", False, False, False, False,
     "The pool of static slots (a holder), allocated once in post_init; its tensors are the parameters' storage. Not real.", []),
    (6, 543, "_prefetch_in_capture", False, False, False, False,
     "A bool flag. Not real (a v12 key).", []),
    (7, 290, "weight", False, False, False, False,
     "HipBMM path: replace_parameter with a transposed view of the shuffled weight; the kept Parameter is refilled in place by copy-back. Not real.", []),
    (7, 430, "use_bpreshuffle", False, False, False, False,
     "A bool flag on the kernel. Not real.", []),
    (7, 439, "aiter_bpreshuffled", False, False, False, False,
     "A bool flag on the layer. Not real.", []),
    (7, 407, "quant_fp8", False, False, False, False,
     "A QuantFP8 CustomOp holder built in __init__, holds no weight-derived tensor. Not real.", []),
    (8, 237, "ocp_mx_linear", False, False, False, False,
     "The MX linear kernel object (a holder); PWAL and apply delegate to it. Not real.", [(8, 152)]),
    (8, 203, "weight_block_size", False, False, False, False,
     "A Python list constant. Not real.", []),
    (9, 44, "weight_scale", False, False, False, False,
     "replace_parameter target (swizzled, padded MXFP4 scales). The padded shape is the same on every PWAL, so copy-back refills the kept Parameter in place; apply reads layer.weight_scale (:72). Not real.", [(9, 72)]),
    (10, 43, "config", False, False, False, False,
     "The kernel's layer config (quant keys, no tensor). Not real.", []),
    (11, 415, "moe_quant_config", True, False, False, False,
     "The WNA16 MoE quant config, rebuilt in every quant-method PWAL from layer.w13_scales / w2_scales (and qzeros) (:405) and passed to the kernel (:418), whose experts read it in apply (:498). On a layerwise reload PWAL runs on the temporary layer, so the config holds the reload temporaries while copy-back refills the kept Parameters; a later kernel-format reload leaves it stale. Real (a v1 key). No spec names MoeWNA16Method's experts (Marlin/Humming/Triton WNA16).",
     [(11, 405), (11, 418), (11, 498)]),
    (11, 417, "moe_kernel", False, False, False, False,
     "The modular MoE kernel object (a holder). Not real.", []),
    (11, 463, "w13_weight", False, False, False, False,
     "The kept registered Parameter assigned under a second name (nn.Module registers it); copy-back refills it. Not real (v2 key).", []),
    (11, 475, "w13_input_global_scale", False, False, False, False,
     "register_parameter of the Marlin input global scale: a registered Parameter present at reload initialize, refilled in place by copy-back. Not real.", []),
    (12, 435, "model_state", False, False, False, False,
     "The model-state object (a holder) built at load; no weight-derived tensor is stored in this file. Not real.", []),
    (12, 547, "intermediate_tensors", False, False, False, False,
     "PP receive workspace allocated once in load_model; not derived from weights and not reallocated by reload_weights (:586-598). Not real.", [(12, 598)]),
    (13, 134, "weight_packed", False, False, False, False,
     "The same Parameter registered under a second name (weight and weight_packed); copy-back refills the kept object. Not real.", []),
    (13, 137, "kernel", False, False, False, False,
     "The MP linear kernel object (a holder). Not real.", []),
    (14, 1256, "_k_scale", False, True, False, False,
     "register_buffer of a new _k_scale (k_scale.detach()) in the CT KV-cache quant PWAL. On reload this PWAL runs only inside _reload_attention_scales, which then copies the new buffer into the kept one and re-registers the kept buffer (reload/layerwise.py:431 and _place_kernel_tensors), so the captured attention path keeps a refilled address; a kernel-format reload copies into the registered buffer. Not real. Close call: a new buffer on each PWAL on an attention layer, safe only by the copy-back.",
     [(RELOAD, 431)]),
    (14, 1257, "_v_scale", False, True, False, False,
     "As _k_scale (:1256): refilled into the kept buffer by _copy_and_restore_kernel_tensors. Not real.", [(RELOAD, 431)]),
    (14, 1258, "_q_scale", False, True, False, False,
     "As _k_scale (:1256): refilled into the kept buffer by _copy_and_restore_kernel_tensors. Not real.", [(RELOAD, 431)]),
    (14, 1267, "_k_scale_float", False, False, False, True,
     "Python float from .item() (host scalar). Not a tensor; reported apart (v7 key).", []),
    (14, 1268, "_v_scale_float", False, False, False, True,
     "Python float from .item() (host scalar). Not a tensor (v7 key).", []),
    (14, 1269, "_q_scale_float", False, False, False, True,
     "Python float from .item() (host scalar). Not a tensor (v2 key, counted real under the pre-v4 rule).", []),
    (14, 174, "scheme", False, False, False, False,
     "The scheme object on the layer (a holder). Not real.", []),
    (15, 99, "b12x_mxfp8_packed_weight", False, False, False, False,
     "Stored through reuse_packed_weight_storage, which copies a same-layout replacement into the existing packed tensors and keeps them, so a layerwise reload keeps the address; the source weight and scale become empty parameters (:103-104), so a kernel-format reload raises rather than going stale. Not real (a v6 key).",
     [(15, 29), (15, 103)]),
    (15, 105, "b12x_warmup_provider", False, False, False, False,
     "The kernel object itself (a warm-up holder). Not real.", []),
    (16, 61, "weight", False, False, False, False,
     "replace_parameter targets (contiguous int8 weight, bf16 scale) on a CPU-only kernel; kept Parameters refilled in place by copy-back, read by getattr on each call (:94-95). Not real.", [(16, 94)]),
    (17, 79, "kernel", False, False, False, False,
     "The MXFP8 linear kernel object (a holder). Not real.", []),
    (18, 398, "_bf16x3_weight", True, False, False, False,
     "ROCm gfx950 bf16x3 split of the fp32 router weight, built in _GateLinearMethod's PWAL and read by forward through rocm_bf16x3_router_gemm_dispatch (:309) on the captured path. A kernel-format reload copies into the registered `weight` without rerunning PWAL and leaves the split stale (the class docstring says an in-place copy_ cannot be detected from forward). Real (a v7 key).",
     [(18, 309)]),
    (18, 177, "_bf16x3_weight", False, False, False, False,
     "register_buffer of None at construction (a placeholder); no value to read. Not real.", []),
    (18, 400, "allow_rocm_bf16x3_router_gemm", False, False, False, False,
     "A bool flag. Not real.", []),
    (19, 203, "scheme", False, False, False, False,
     "The Quark scheme object on the layer (a holder). Not real.", []),
    (20, 53, "renormalize", False, False, False, False,
     "A Python bool copied from the layer in the experts PWAL. Not real (v1/v3 key).", []),
    (20, 54, "custom_routing_function", False, False, False, False,
     "A callable copied from the layer, not a tensor. Not real.", []),
]


def line_text(path: str, n: int) -> str:
    with open(os.path.join(SP, path), encoding="utf-8") as fh:
        return fh.read().splitlines()[n - 1].strip()


def earlier_keys() -> list[tuple[str, int, str]]:
    keys = []

    def walk(x):
        if isinstance(x, dict):
            if "file" in x and "attr" in x and "line" in x:
                keys.append((x["file"], int(x["line"]), x["attr"]))
            for v in x.values():
                walk(v)
        elif isinstance(x, list):
            for v in x:
                walk(v)

    for p in sorted(glob.glob("tests/resources/static_recall_outside_v*_vllm_0.33.json")):
        if "_result_" in p or "v18" in p:
            continue
        walk(json.load(open(p)))
    return keys


def main() -> None:
    draw = json.load(open(DRAW))
    assert [F[i] for i in range(1, 21)] == draw["drawn"], "drawn order mismatch"
    prior = earlier_keys()
    cands = []
    for fno, line, attr, real, close, decl, host, why, extra in J:
        path = F[fno]
        held = not any(f == path and a == attr and abs(ln - line) <= 3 for f, ln, a in prior)
        quotes = [f"{path}:{line} {line_text(path, line)}"]
        for q in extra:
            qp = F[q[0]] if isinstance(q[0], int) else q[0]
            quotes.append(f"{qp}:{q[1]} {line_text(qp, q[1])}")
        cands.append({
            "file": path, "line": line, "attr": attr, "real": real, "why": why,
            "close_call": close, "host_scalar": host, "declared_by_spec": decl,
            "held_out": held, "quotes": quotes,
        })
    real = [c for c in cands if c["real"]]
    files_with_real = sorted({c["file"] for c in real})
    out = {
        "seed": draw["seed"], "n": draw["n"], "vllm": "0.33.0",
        "excluded": {
            "files": sorted(os.path.basename(p) for p in glob.glob("tests/resources/static_recall_outside_v*_vllm_0.33.json") if "_result_" not in p and "v18" not in p),
            "rule": "held_out is false when the same (file, attr) within 3 lines is a candidate of an earlier list static_recall_outside_v*_vllm_0.33.json (v1..v17g); nothing is removed from the file draw",
        },
        "rules_commit": "dcbb707",
        "draw_rules_commit": "79a5fec",
        "definition": "Aligned real-site definition (v4), docs/audit-static-outside-review.md, applied unchanged: real exactly when the published precision judging rule would call the site TP if the audit flagged it (post-load reader; layerwise reload_weights or a kernel-format reload after it leaves the value stale or moves storage a captured path reads, aliases of reload temporaries included; CPU clause; long-lived owner). Python host scalars are marked host_scalar and not real.",
        "command": "python3 tests/resources/static_recall_file_draw.py --seed-file tests/resources/static_recall_file_seed_v18.json (draw committed in 79a5fec); list built by benchmarks/results/review23d/build_list.py",
        "judge": "review23d (outside judge D; independent of review23e)",
        "judged": len(draw["drawn"]),
        "judged_files": draw["drawn"],
        "judged_rule": "every drawn file read whole in the drawn order; every store on a long-lived object that a post-load reader might read was considered; all 20 files judged (no prefix cut)",
        "lists": {
            "file_draw_v18_judge_d": {
                "population": draw["population"],
                "drawn": draw["drawn"],
                "real": len(real),
                "held_out_real": sum(c["held_out"] for c in real),
                "undeclared_real": sum(not c["declared_by_spec"] for c in real),
                "files_with_real": files_with_real,
                "files_without_real": [f for f in draw["drawn"] if f not in files_with_real],
                "candidates": cands,
            }
        },
    }
    with open(OUT, "w") as fh:
        json.dump(out, fh, indent=1)
        fh.write("\n")
    print(f"candidates {len(cands)} real {len(real)} held_out_real {out['lists']['file_draw_v18_judge_d']['held_out_real']} undeclared_real {out['lists']['file_draw_v18_judge_d']['undeclared_real']}")
    for c in real:
        print(" REAL", c["file"], c["line"], c["attr"], "held_out" if c["held_out"] else "not_held_out", "close" if c["close_call"] else "")


if __name__ == "__main__":
    main()
