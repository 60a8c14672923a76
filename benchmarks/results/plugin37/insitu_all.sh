#!/usr/bin/env bash
# Every in-situ experiment of plugin37, one after another, each JSON line kept:
#   bash benchmarks/results/plugin37/insitu_all.sh OUT_DIR [ROUNDS]
set -euo pipefail
out=$1 rounds=${2:-201}
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$out"
for name in calib_plumbing calib_guard split_compare calib_words calib_refill raw_compare \
    getter_compare fused_dirty stack_stages; do
  python3 "$here/insitu_ab.py" "$name" "$rounds" 2> "$out/$name.err" | tail -1 > "$out/$name.json"
  echo "$name $(cat "$out/$name.json")"
done
