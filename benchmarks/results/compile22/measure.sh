#!/usr/bin/env bash
# Side by side with the base (671b8a1), alternating processes (base, branch, base, branch):
#   mkdir -p /tmp/base_compile22 && git archive 671b8a1 | tar -x -C /tmp/base_compile22
#   bash benchmarks/results/compile22/measure.sh /tmp/base_compile22
set -euo pipefail
BASE=${1:-/tmp/base_compile22}
BRANCH=$(cd "$(dirname "$0")/../../.." && pwd)
OUT=$BRANCH/benchmarks/results/compile22
for round in 1 2; do
  for tree in base branch; do
    dir=$BASE; [ $tree = branch ] && dir=$BRANCH
    echo "$(date -u +%H:%M:%S) $tree round $round load $(cut -d' ' -f1-3 /proc/loadavg)" >> "$OUT/load.log"
    (cd "$dir" && PYTHONPATH=$dir python3 benchmarks/bench_compile_phases.py --size 100000 \
        --repeat 1 --json "$OUT/phases_100k_${tree}_${round}.json" > /dev/null)
    (cd /tmp && PYTHONPATH=$dir python3 -m derivgraph.cli bench --workload scaling \
        --format json > "$OUT/scaling_${tree}_${round}.json")
  done
done
