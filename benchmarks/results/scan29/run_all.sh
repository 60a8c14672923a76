#!/usr/bin/env bash
# scan29's measurements, in order, from the repository root (base: git archive f43b165 at
# /tmp/base_scan29), each with `uptime` before and after. Cut to 3 side-by-side repeats and
# 2 CLI pairs: at load 10-12 one cold scan took ~2.5-3 min (deadline). From the root:
#   bash benchmarks/results/scan29/run_all.sh          # or: bash ... run_all.sh --after-identical
set -u
R=benchmarks/results/scan29
BASE=/tmp/base_scan29
if [ "${1:-}" != --after-identical ]; then
  { echo "start $(date -u +%H:%M:%S) $(uptime)"; bash $R/identical.sh; echo "end $(uptime)"; } > $R/identical.txt 2>&1
fi
{ echo "before $(date -u +%H:%M:%S) $(uptime)"
  python3 benchmarks/bench_static_side_by_side.py --base $BASE --repeat 3 --json $R/side_by_side.json
  echo "after $(date -u +%H:%M:%S) $(uptime)"; } > $R/side_by_side_log.txt 2>&1
bash $R/pairs.sh 2 > $R/pairs.txt 2>&1
for n in 1; do  # phase profiles (scan28's script), alternating
  { echo "$(date -u +%H:%M:%S) $(uptime)"; (cd $BASE && PYTHONPATH=$BASE python3 "$OLDPWD/benchmarks/results/scan28/phases.py"); } > $R/phases_base_$n.txt 2>&1
  { echo "$(date -u +%H:%M:%S) $(uptime)"; PYTHONPATH=$PWD python3 benchmarks/results/scan28/phases.py; } > $R/phases_scan29_$n.txt 2>&1
done
echo "done $(date -u +%H:%M:%S)" > $R/run_all.done
