#!/usr/bin/env bash
# Alternate this tree and the branch point (/tmp/base_e2e20d = git archive 001875c, with this
# branch's bench_vllm_reload.py copied in), one process each per round, with the paired arms.
# usage: bash benchmarks/results/e2e20d/side_by_side.sh TAG REPEAT ROUNDS
set -u
TAG=$1; REPEAT=$2; ROUNDS=$3
HERE=$(cd "$(dirname "$0")/../../.." && pwd); OUT=$HERE/benchmarks/results/e2e20d
BASE=/tmp/base_e2e20d
for r in $(seq 1 "$ROUNDS"); do
  for tree in branch base; do
    dir=$HERE; [ "$tree" = base ] && dir=$BASE
    echo "$tree r$r start $(date -u +%T) $(uptime)" >> "$OUT/${TAG}_log.txt"
    (cd "$dir" && PYTHONPATH=$dir python3 benchmarks/bench_vllm_reload.py --clock cpu \
        --repeat "$REPEAT" --unhooked --json "$OUT/${TAG}_${tree}_r$r.json" > /dev/null 2>&1)
    echo "$tree r$r end   $(date -u +%T) $(uptime)" >> "$OUT/${TAG}_log.txt"
  done
done
