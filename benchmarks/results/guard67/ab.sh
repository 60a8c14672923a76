#!/bin/bash
# Alternating processes: the bench of the BASE tree (main at dd7ffc9a) and of this tree (the
# guard's steady restore entry), pair k base first when k is odd; --clock cpu --repeat REPEAT; one JSON
# each under OUT (base_K.json, mine_K.json).
#   PATH=/work/venv/bin:$PATH bash benchmarks/results/guard67/ab.sh /tmp/base67 FIRST LAST 1001 OUT
set -u
BASE=$1; FIRST=$2; LAST=$3; REPEAT=$4; OUT=$5
MINE=$(cd "$(dirname "$0")/../../.." && pwd)
mkdir -p "$OUT"
run() { (cd "$2" && PYTHONPATH="$2" python3 benchmarks/bench_vllm_reload.py --clock cpu --repeat "$REPEAT" --json "$OUT/$1_$3.json" > /dev/null 2>"$OUT/$1_$3.err"); }
for k in $(seq "$FIRST" "$LAST"); do
  if [ $((k % 2)) -eq 1 ]; then order="base mine"; else order="mine base"; fi
  for who in $order; do
    echo "pair $k $who $(date +%T) load $(cut -d' ' -f1 /proc/loadavg)"
    if [ "$who" = base ]; then run base "$BASE" "$k"; else run mine "$MINE" "$k"; fi
  done
done
