#!/usr/bin/env bash
# Alternate this branch (a `git archive` of the commit measured, in /tmp/r22_branch) and the
# branch point (/tmp/base_refill22 = git archive 671b8a1: the same bench_vllm_reload.py), one
# process each per round, with the paired arms (off, the plugin, unhooked, no-guard), then one
# --pieces process each.
# usage: bash benchmarks/results/refill22/side_by_side.sh TAG REPEAT ROUNDS
set -u
TAG=$1; REPEAT=$2; ROUNDS=$3
HERE=$(cd "$(dirname "$0")/../../.." && pwd); OUT=$HERE/benchmarks/results/refill22
BRANCH=${BRANCH:-/tmp/r22_branch}; BASE=${BASE:-/tmp/base_refill22}
for r in $(seq 1 "$ROUNDS"); do
  for tree in branch base; do
    dir=$BRANCH; [ "$tree" = base ] && dir=$BASE
    echo "$tree r$r start $(date -u +%T) $(uptime)" >> "$OUT/${TAG}_log.txt"
    (cd "$dir" && PYTHONPATH=$dir python3 benchmarks/bench_vllm_reload.py --clock cpu \
        --repeat "$REPEAT" --unhooked --no-guard --json "$OUT/${TAG}_${tree}_r$r.json" \
        > /dev/null 2>&1)
    echo "$tree r$r end   $(date -u +%T) $(uptime)" >> "$OUT/${TAG}_log.txt"
  done
done
for tree in branch base; do
  dir=$BRANCH; [ "$tree" = base ] && dir=$BASE
  echo "$tree pieces start $(date -u +%T) $(uptime)" >> "$OUT/${TAG}_log.txt"
  (cd "$dir" && PYTHONPATH=$dir python3 benchmarks/bench_vllm_reload.py --clock cpu \
      --repeat 201 --pieces --json "$OUT/${TAG}_${tree}_pieces.json" > /dev/null 2>&1)
  echo "$tree pieces end   $(date -u +%T) $(uptime)" >> "$OUT/${TAG}_log.txt"
done
