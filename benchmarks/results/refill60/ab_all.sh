#!/bin/bash
# The refill60 A/Bs, one after another (never two at once), alternating processes base / this
# tree. Usage (repository root): PATH=/work/venv/bin:$PATH BASE=/tmp/base_refill60 bash benchmarks/results/refill60/ab_all.sh
set -u
base=${BASE:-/tmp/base_refill60}; out=benchmarks/results/refill60
mkdir -p $out/phases $out/pieces $out/ab
# 1. deepseek refill phases (CPU, 496 entries), 3 an arm, 41 rounds each
for i in 1 2 3; do for t in base mine; do
  tree=$base; [ $t = mine ] && tree=$PWD
  PYTHONPATH=$tree python3 $tree/benchmarks/bench_refill_phases.py --device cpu --workload deepseek \
    --clock cpu --repeat 41 --json $out/phases/phases_${t}_$i.json > /dev/null 2>&1
  echo "phases $t $i load $(cut -d' ' -f1 /proc/loadavg)"
done; done
# 2. the tiny vLLM Llama's pieces, 3 an arm, 101 rounds each
BASE=$base ROUNDS=3 REPEAT=101 OUT=$out/pieces bash benchmarks/results/refill57/pieces.sh
# 3. end to end, paired ratio, 4 an arm, 151 rounds each
BASE=$base ROUNDS=4 REPEAT=151 OUT=$out/ab MINE=mine bash benchmarks/results/s52/vllm/ab.sh
