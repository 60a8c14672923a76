#!/bin/bash
# the branch tree: /tmp/e2e20c_snap_m1 (git archive of the measured commit); the base: /tmp/base_e2e (eb637cd)
OUT=/work/wt/e2e20c/benchmarks/results/e2e20c
for r in 1 2; do
  if [ $r = 1 ]; then order="branch base"; else order="base branch"; fi
  for t in $order; do
    if [ $t = branch ]; then dir=/tmp/e2e20c_snap_m1; else dir=/tmp/base_e2e; fi
    echo "$(date -u +%H:%M:%S) $t r$r $(uptime)" >> $OUT/pieces_log.txt
    (cd $dir && PYTHONPATH=$dir python3 benchmarks/bench_vllm_reload.py --clock cpu --repeat 101 --pieces --json $OUT/pieces_${t}_r$r.json > /dev/null 2>&1)
    python3 -c "
import json;d=json.load(open('$OUT/pieces_${t}_r$r.json'));p=d['pieces_us']
print('$t r$r', d['plugin_over_off'], d['paired_plugin_cost_ms'], {k: (v['median'], v['min']) for k, v in p.items() if k in ('complete','plan.refill','guard.restore','guard.restore: survey','plan.refill: sources_intact (each)','guard.restore: address sweep')})" >> $OUT/pieces_log.txt
  done
done
echo done >> $OUT/pieces_log.txt
