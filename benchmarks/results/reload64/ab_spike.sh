#!/bin/bash
# Alternating processes: the library's bench (BASE tree) and the spike's (this tree), pair k
# base first when k is odd; --clock cpu --repeat REPEAT; one JSON each under OUT.
#   PATH=/work/venv/bin:$PATH bash benchmarks/results/reload64/ab_spike.sh /tmp/base_reload64 FIRST LAST 1001 OUT
set -u
BASE=$1; FIRST=$2; LAST=$3; REPEAT=$4; OUT=$5
MINE=$(cd "$(dirname "$0")/../../.." && pwd)
mkdir -p "$OUT"
run_base() { (cd "$BASE" && PYTHONPATH="$BASE" python3 benchmarks/bench_vllm_reload.py --clock cpu --repeat "$REPEAT" --json "$OUT/base_$1.json" > /dev/null 2>&1); }
run_mine() { (cd "$MINE" && PYTHONPATH="$MINE" python3 benchmarks/results/reload64/bench_spike.py --clock cpu --repeat "$REPEAT" --json "$OUT/spike_$1.json" > /dev/null 2>"$OUT/spike_$1.err"); }
for k in $(seq "$FIRST" "$LAST"); do
  if [ $((k % 2)) -eq 1 ]; then
    echo "pair $k base $(date +%T) load $(cut -d' ' -f1 /proc/loadavg)"; run_base "$k"
    echo "pair $k spike $(date +%T) load $(cut -d' ' -f1 /proc/loadavg)"; run_mine "$k"
  else
    echo "pair $k spike $(date +%T) load $(cut -d' ' -f1 /proc/loadavg)"; run_mine "$k"
    echo "pair $k base $(date +%T) load $(cut -d' ' -f1 /proc/loadavg)"; run_base "$k"
  fi
done
