#!/usr/bin/env bash
# Cold CLI runs, alternating base (f43b165, git archive at /tmp/base_scan29) and this tree,
# N pairs (default 5), each run with the time and the load before it. From the repository root:
#   bash benchmarks/results/scan29/pairs.sh 5 > benchmarks/results/scan29/pairs.txt 2>&1
BASE=/tmp/base_scan29
THIS=$(pwd)
once() {  # once PAIR NAME TREE
  echo "pair $1 $2 $(date -u +%H:%M:%S) load $(uptime | sed 's/.*load average: //')"
  cd "$3" && PYTHONPATH="$3" /usr/bin/time -f "pair $1 $2 %e s wall %U s user %S s sys" \
    python3 -m derivgraph.cli audit static --package vllm --format json -o /dev/null
}
for n in $(seq 1 "${1:-5}"); do
  (once "$n" base "$BASE")
  (once "$n" scan29 "$THIS")
done
