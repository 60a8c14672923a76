#!/usr/bin/env bash
# Cold CLI scans of vLLM 0.33.0, a git archive of 99026df (the session's start) and this tree
# alternating, N pairs; one line per run with the load: bash benchmarks/results/scan_s30_pairs.sh N BASE
set -u
n="${1:-4}"; base="${2:-/tmp/base_s30}"; here="$(cd "$(dirname "$0")/../.." && pwd)"
for i in $(seq 1 "$n"); do
  for tree in base merged; do
    dir=$here; [ "$tree" = base ] && dir=$base
    load=$(cut -d' ' -f1 /proc/loadavg)
    t=$( { cd "$dir" && PYTHONPATH=$dir /usr/bin/time -f '%e %U %S' python3 -m derivgraph.cli audit static \
          --package vllm --format json -o /dev/null; } 2>&1 | tail -1)
    echo "$tree pair=$i load=$load wall_user_sys=$t"
  done
done
