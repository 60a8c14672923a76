#!/usr/bin/env bash
# Run every review19b probe on CPU with the system python3 (vLLM 0.33.0) and keep the output.
# Usage (from the worktree root): bash benchmarks/results/review19b/run_probes.sh
set -euo pipefail
cd "$(dirname "$0")"
for p in probe_quant_config_alias probe_triton_plain_attr probe_online_mxfp4_triton \
         probe_cpu_conv_unpacked probe_zen_cpu_linear probe_xpress_fused_buf \
         probe_dflash2_context_kv probe_dsv4_gateup_scale probe_dsv4_shared_w2; do
  echo "== $p" >&2
  python3 "$p.py" 2>&1 | grep -v -e '^W1203' -e "No module named 'vllm._C'" -e '^INFO' > "$p.out"
done
