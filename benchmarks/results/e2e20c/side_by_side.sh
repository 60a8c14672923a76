#!/bin/bash
# the branch tree is a copy of this commit: mkdir -p /tmp/e2e20c_snap_$TAG && git archive HEAD | tar -x -C /tmp/e2e20c_snap_$TAG
# usage: side.sh TAG REPEAT ROUNDS
set -e
TAG=$1; REP=$2; ROUNDS=$3
OUT=/work/wt/e2e20c/benchmarks/results/e2e20c
mkdir -p $OUT
for r in $(seq 1 $ROUNDS); do
  if [ $((r % 2)) = 1 ]; then order="branch base"; else order="base branch"; fi
  for t in $order; do
    if [ $t = branch ]; then dir=/tmp/e2e20c_snap_$TAG; else dir=/tmp/base_e2e; fi
    echo "$(date -u +%H:%M:%S) $t r$r $(uptime)" >> $OUT/${TAG}_log.txt
    (cd $dir && PYTHONPATH=$dir python3 benchmarks/bench_vllm_reload.py --clock cpu --repeat $REP --json $OUT/${TAG}_${t}_r$r.json > /dev/null 2>&1)
    python3 -c "import json;d=json.load(open('$OUT/${TAG}_${t}_r$r.json'));print('$t r$r', d['plugin_over_off'], d['min_plugin_over_off'], d['q10_plugin_over_off'], d['paired_plugin_cost_ms'], d['vllm_off_ms'], d['moved_after_plugin_reload'])" >> $OUT/${TAG}_log.txt
  done
done
echo done >> $OUT/${TAG}_log.txt
