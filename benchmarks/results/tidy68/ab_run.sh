#!/bin/bash
# Alternating processes (pair k: A first when k is odd): refill66's steady_arms.py (off,refill,
# 10 cycles of blocks of 5, the tiny vLLM Llama on CPU) run with PYTHONPATH=A (the tree before
# item 4) and PYTHONPATH=B (this tree); its "the plan's run" line is the refill's own time.
#   PATH=/work/venv/bin:$PATH bash benchmarks/results/tidy68/ab_run.sh A B PAIRS OUT
set -u
A=$1; B=$2; PAIRS=$3; OUT=$4
ARMS=$(cd "$(dirname "$0")/../refill66" && pwd)/steady_arms.py
mkdir -p "$OUT"
for k in $(seq 1 "$PAIRS"); do
  if [ $((k % 2)) -eq 1 ]; then order="A B"; else order="B A"; fi
  for who in $order; do
    if [ "$who" = A ]; then tree=$A; else tree=$B; fi
    echo "pair $k $who $(date +%T) load $(cut -d' ' -f1 /proc/loadavg)"
    (cd "$tree" && PYTHONPATH="$tree" python3 "$ARMS" 10 off,refill > "$OUT/${who}_$k.txt" 2>/dev/null)
  done
done
