"""Write changed_readers.md: every finding whose reader or reader kind differs between the
report of dd9f38c (before_dd9f38c.json) and of evid27 (after.json), with the verdict of the
helper's reading of vLLM 0.33.0's installed source (per callee for a kind change: the call the
argument is handed to; per finding for a moved line).

    python3 benchmarks/results/evid27/changed_readers.py
"""
import json
import re
from pathlib import Path

import vllm

from derivgraph.audit.static import read_sites, readers

HERE = Path(__file__).resolve().parent
LOC = re.compile(r"^\S+ (\S+?):(\d+) in ")
ROOT = Path(vllm.__file__).resolve().parents[1]


def callee_of(reader: str, attr: str) -> str:
    """The kernel call the audit's rule finds for the reader line (the report shows the line
    only): read with the audit's own functions on the installed source."""
    path, line = LOC.match(reader).groups()
    text = (ROOT / path).read_text()
    lines = text.split("\n")
    col = lines[int(line) - 1].find(attr)
    pos = sum(len(x) + 1 for x in lines[:int(line) - 1]) + max(col, 0)
    start = pos - max(col, 0)
    lookup = lines[int(line) - 1].find("getattr(")
    if 0 <= lookup < col:
        pos = start + lookup  # ``getattr(holder, "attr")``: read from the lookup's start
    while pos > 0 and (text[pos - 1].isalnum() or text[pos - 1] in "_."):
        pos -= 1  # the receiver's start
    return read_sites.kernel_callee(text, readers._FileDefs(text), pos, readers._is_kernel)

# the call a read is handed to, read at its definition or use in the installed source
CALLEES = {
    "invoke_fused_moe_triton_kernel": "Triton fused-MoE kernel launch",
    "run_cutlass_moe_w4a8_fp8": "runs the CUTLASS W4A8 grouped GEMMs",
    "run_cutlass_moe_fp8": "runs the CUTLASS FP8 grouped GEMMs",
    "apply_humming_linear": "calls humming_forward (the Humming kernel); locks is its workspace",
    "ops.rms_norm": "vLLM custom op",
    "self.moe_kernel.apply": "the modular MoE kernel object's launch",
    "self.moe_kernel.apply_monolithic": "the modular MoE kernel object's launch",
    "flashinfer_cutlass_fused_moe": "FlashInfer CUTLASS fused MoE (quant_scales / swiglu locals)",
    "m_grouped_fp8_gemm_nt_contiguous": "DeepGEMM grouped GEMM",
    "torch.ops.vllm.xpu_fp8_bmm": "XPU FP8 bmm op",
    "rocm_aiter_ops.do_qk_norm_rope_kvcache_update": "AITER fused kernel",
    "torch.ops.zentorch.zentorch_fused_moe": "ZenTorch op",
    "wrapper.run": "FlashInfer b12x MoE wrapper launch (self._wrapper)",
    "prefill_wrapper.run": "FlashInfer attention-sink prefill wrapper launch",
    "ops.fused_minimax_m3_qknorm_rope_kv_insert": "vLLM custom op",
    "rocm_aiter_fused_experts": "AITER fused experts",
    "torch.ops.zentorch.zentorch_woq_linear.default": "ZenTorch op",
    "flashinfer.fused_moe.trtllm_fp8_per_tensor_scale_moe": "FlashInfer TRT-LLM MoE",
    "flashinfer.fused_moe.trtllm_fp4_block_scale_routed_moe": "FlashInfer TRT-LLM MoE",
    "msa_cutlass_sparse_decode": "CUTLASS sparse decode kernel",
    "torch.ops._C.onednn_scaled_mm": "oneDNN op (CPU)",
    "torch.ops.zentorch.zentorch_dynamic_qlinear.default": "ZenTorch op",
    "invoke_fused_moe_nvfp4_emulation_kernel": "Triton emulation kernel launch",
    "F.linear": "GEMM",
    "fused_mla_decode_q_concat_kv_cache_insert": "fused MLA decode kernel",
    "ops.bmm_cpu": "CPU bmm op",
    "torch.ops._C.fp8_scaled_mm_cpu": "CPU op",
    "flashinfer_cute_dsl_fused_moe_nvfp4": "FlashInfer CuTe-DSL MoE (fc2_input_scale local)",
    "torch.ops.vllm.rocm_bf16x3_router_gemm_dispatch": "vLLM op",
    "deep_gemm.fp4_fp4_mega_moe": "DeepGEMM mega-MoE",
    "torch.ops.vllm.inc_ark_woq_linear.default": "vLLM op",
    "fused_experts": "Triton fused experts",
    "torch.bmm": "GEMM",
    "rocm_aiter_ops.gemm_a8w8_blockscale_bpreshuffle": "AITER GEMM",
    "batched_gemm_a8w8_mxscale": "AITER batched GEMM",
    "ops.concat_and_cache_mla_grouped": "vLLM custom op",
    "router_bf16x3_gemm": "the router GEMM op (planes = getattr(...) local)",
    "deep_gemm.bf16_mega_moe": "DeepGEMM mega-MoE",
    "fused_marlin_moe": "Marlin fused MoE",
    "blockscaled.mm": "b12x block-scaled GEMM",
    "api.mm": "b12x block-scaled GEMM",
    "dispatch_unquantized_gemm": "dispatch_unquantized_gemm()(...): the GEMM it returns",
    "kernel": "kernel = self.dg.nvfp4_mega_moe (DeepGEMM), kernel(**kernel_kwargs)",
    "self._bpre_attn_gemm": "AITER pre-shuffled GEMM helper",
    "self.kernel.apply_weights": "the linear kernel object's apply",
    "torch.mm": "GEMM reading an entry of the local alias (`buf[\"whc_t\"]`)",
}
MOVED = {
    "prefetch.py:661 _cpu_storage": ("right", "the binding in start_onload_to_static whose "
        "local the H2D copy `gpu_buffer.copy_(cpu_storage, non_blocking=True)` (:563) reads; "
        "the shape/stride reads of get_param_infos (:494) and assign_buffer_slot (:518) are "
        "now checks"),
    "prefetch.py:705 _cpu_storage": ("right", "as :661"),
    "speculator.py:41 _k_scale": ("right (platform-dependent)", "the draft layer is an "
        "`Attention` (gemma4_mtp.py:223); the store's module names TRITON_ATTN twice (the "
        "backend Gemma4 forces, models/config.py:363 when FA4 is not available) and "
        "FLASH_ATTN once; MLAAttention won before only by scan order (model_executor/ < v1/). "
        "On SM90 with an FP8 KV cache or where FA4 is available, Gemma4 serves through "
        "FlashAttention instead (models/config.py:340-355)"),
    "speculator.py:41 _v_scale": ("right (platform-dependent)", "as _k_scale"),
}


def main() -> None:
    key = lambda f: (f["file"], f["line"], f["attr"], f["category"])  # noqa: E731
    before = {key(f): f for f in json.loads((HERE / "before_dd9f38c.json").read_text())}
    after = {key(f): f for f in json.loads((HERE / "after.json").read_text())}
    rows, counts = [], {}
    for k, x in before.items():
        y = after[k]
        if (x["reader"], x["reader_kind"]) == (y["reader"], y["reader_kind"]):
            continue
        lx, ly = LOC.match(x["reader"] or ""), LOC.match(y["reader"] or "")
        same = lx and ly and lx.groups() == ly.groups()
        site = f"{Path(k[0]).name}:{k[1]} {k[2]}"
        if not same:
            change, (verdict, why) = "line moved", MOVED[site]
        else:
            callee = callee_of(y["reader"], k[2] if k[2] in y["reader"] else
                               y["reader"].split(": ", 1)[1].strip()[:1])
            change = ("kind forward -> kernel-call" if x["reader_kind"] != y["reader_kind"]
                      else "callee quoted")
            if callee:
                verdict, why = ("right", f"`{callee}`: {CALLEES[callee]}")
            elif "@" in y["reader"]:
                verdict, why = "right", "a matrix product by `@` (GEMM) on the line"
            else:
                verdict, why = "right", "the line names the kernel"
        counts[(change, verdict)] = counts.get((change, verdict), 0) + 1
        rows.append(f"| {x['severity']}{' (declared)' if x['declared'] else ''} | "
                    f"`{k[0]}:{k[1]}` {k[2]} | {change} | `{x['reader_kind']} "
                    f"{(x['reader'] or '').split(' ', 1)[1][:150]}` | `{y['reader_kind']} "
                    f"{(y['reader'] or '').split(' ', 1)[1][:190]}` | {verdict}: {why} |")
    out = ["# Changed readers, evid27 vs dd9f38c", "",
           "Reports: `before_dd9f38c.json` (dd9f38c) and `after.json` (evid27), both "
           "`derivgraph audit static --package vllm --format json`; keyed by file, line, "
           "attribute, category. Written by `python3 benchmarks/results/evid27/changed_readers.py`"
           " (the call a kind change rests on is recomputed from the installed source with the "
           "audit's own `read_sites.kernel_callee`; the report shows the line only).",
           "Verdicts are the helper's reading of vLLM 0.33.0's installed source at each new "
           "reader (kind changes: the call the rule finds, judged by its name or, where the "
           "name is not self-evident, read at its definition).", "",
           f"**{len(rows)} findings changed** (sites, severities and every other field: "
           "unchanged, `reader_diff.txt`):", ""]
    out += [f"- {c}: {n} ({v})" for (c, v), n in sorted(counts.items())]
    out += ["", "| severity | site | change | old reader | new reader | verdict |",
            "|---|---|---|---|---|---|", *rows, ""]
    (HERE / "changed_readers.md").write_text("\n".join(out))


if __name__ == "__main__":
    main()
