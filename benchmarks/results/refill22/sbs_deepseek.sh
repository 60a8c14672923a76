#!/usr/bin/env bash
# Alternate this branch (/tmp/r22_branch) and the branch point (/tmp/base_refill22), one process
# each per round, the same script (post_load_refill.py, run from here) in both.
# usage: bash benchmarks/results/refill22/sbs_deepseek.sh TAG REPEAT ROUNDS
set -u
TAG=$1; REPEAT=$2; ROUNDS=$3
HERE=$(cd "$(dirname "$0")/../../.." && pwd); OUT=$HERE/benchmarks/results/refill22
BRANCH=${BRANCH:-/tmp/r22_branch}; BASE=${BASE:-/tmp/base_refill22}
for r in $(seq 1 "$ROUNDS"); do
  for tree in branch base; do
    dir=$BRANCH; [ "$tree" = base ] && dir=$BASE
    echo "$tree r$r start $(date -u +%T) $(uptime)" >> "$OUT/${TAG}_log.txt"
    (cd "$dir" && PYTHONPATH=$dir python3 "$OUT/post_load_refill.py" --repeat "$REPEAT" \
        --json "$OUT/${TAG}_${tree}_r$r.json" > /dev/null 2>&1)
    echo "$tree r$r end   $(date -u +%T) $(uptime)" >> "$OUT/${TAG}_log.txt"
  done
done
