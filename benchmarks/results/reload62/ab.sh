#!/bin/bash
# Alternating processes, base tree vs this tree: bench_vllm_reload.py --clock cpu --repeat N,
# one JSON per process. Pair k runs base first when k is odd, this tree first when even.
# Usage (from this tree's root):
#   PATH=/work/venv/bin:$PATH bash benchmarks/results/reload62/ab.sh BASE FIRST LAST REPEAT OUT
set -u
base=$1; first=$2; last=$3; repeat=$4; out=$5
mine=$PWD
mkdir -p "$out"
one() {  # tree, label, k
  (cd "$1" && PYTHONPATH="$1" python3 benchmarks/bench_vllm_reload.py --clock cpu \
     --repeat "$repeat" --json "$out/$2_$3.json" > /dev/null 2>&1)
  echo "$2 $3 done $(date +%T) load $(cut -d' ' -f1 /proc/loadavg)"
}
for k in $(seq "$first" "$last"); do
  if [ $((k % 2)) -eq 1 ]; then one "$base" base "$k"; one "$mine" mine "$k"
  else one "$mine" mine "$k"; one "$base" base "$k"; fi
done
