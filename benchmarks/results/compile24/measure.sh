#!/usr/bin/env bash
# Side by side with the base (0327f67), alternating processes (base, branch, base, branch):
#   mkdir -p /tmp/base_compile24 && git archive 0327f67 | tar -x -C /tmp/base_compile24
#   cp benchmarks/bench_compile_phases.py /tmp/base_compile24/benchmarks/
#   bash benchmarks/results/compile24/measure.sh /tmp/base_compile24
set -euo pipefail
BASE=${1:-/tmp/base_compile24}
BRANCH=$(cd "$(dirname "$0")/../../.." && pwd)
OUT=$BRANCH/benchmarks/results/compile24
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
# the refill's and run()'s host time on the DeepSeek workload (alternating inside the script)
echo "$(date -u +%H:%M:%S) refill side by side load $(cut -d' ' -f1-3 /proc/loadavg)" >> "$OUT/load.log"
python3 "$BRANCH/benchmarks/bench_side_by_side.py" --against "$BASE" --rounds 2 --repeat 21 \
    --workloads deepseek --json "$OUT/refill_deepseek_side_by_side.json" > /dev/null
