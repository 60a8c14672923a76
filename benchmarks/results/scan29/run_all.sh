#!/usr/bin/env bash
# scan29's measurements, in order, from the repository root (base: git archive f43b165 at
# /tmp/base_scan29), each with `uptime` before and after:
#   bash benchmarks/results/scan29/run_all.sh
set -u
R=benchmarks/results/scan29
BASE=/tmp/base_scan29
{ echo "start $(date -u +%H:%M:%S) $(uptime)"; bash $R/identical.sh; echo "end $(uptime)"; } > $R/identical.txt 2>&1
{ echo "before $(date -u +%H:%M:%S) $(uptime)"
  python3 benchmarks/bench_static_side_by_side.py --base $BASE --repeat 5 --json $R/side_by_side.json
  echo "after $(date -u +%H:%M:%S) $(uptime)"; } > $R/side_by_side_log.txt 2>&1
bash $R/pairs.sh 5 > $R/pairs.txt 2>&1
for n in 1 2; do  # phase profiles, alternating
  { echo "$(date -u +%H:%M:%S) $(uptime)"; (cd $BASE && PYTHONPATH=$BASE python3 "$OLDPWD/benchmarks/results/scan28/phases.py"); } > $R/phases_base_$n.txt 2>&1
  { echo "$(date -u +%H:%M:%S) $(uptime)"; PYTHONPATH=$PWD python3 benchmarks/results/scan28/phases.py; } > $R/phases_scan29_$n.txt 2>&1
done
echo done > $R/run_all.done
