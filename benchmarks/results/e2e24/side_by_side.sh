#!/usr/bin/env bash
# Alternate this branch (a `git archive` of the commit measured, in /tmp/e2e24_branch) and the
# base (/tmp/base_e2e24 = git archive 0327f67; the same bench_vllm_reload.py), one process each
# per round: the paired arms off, the plugin, hooks-only and no-guard (e2e24).
# usage: bash benchmarks/results/e2e24/side_by_side.sh TAG REPEAT ROUNDS
# (BRANCH, BASE and OUT from the environment override the defaults: e2e26 ran it with its own)
set -u
TAG=$1; REPEAT=$2; ROUNDS=$3
HERE=$(cd "$(dirname "$0")/../../.." && pwd); OUT=${OUT:-$HERE/benchmarks/results/e2e24}
BRANCH=${BRANCH:-/tmp/e2e24_branch}; BASE=${BASE:-/tmp/base_e2e24}
for r in $(seq 1 "$ROUNDS"); do
  for tree in branch base; do
    dir=$BRANCH; [ "$tree" = base ] && dir=$BASE
    echo "$tree r$r start $(date -u +%T) $(uptime)" >> "$OUT/${TAG}_log.txt"
    (cd "$dir" && PYTHONPATH=$dir python3 benchmarks/bench_vllm_reload.py --clock cpu \
        --repeat "$REPEAT" --hooks-only --no-guard --json "$OUT/${TAG}_${tree}_r$r.json" \
        > /dev/null 2>&1)
    echo "$tree r$r end   $(date -u +%T) $(uptime)" >> "$OUT/${TAG}_log.txt"
  done
done
