#!/bin/bash
# --pieces A/B, alternating processes base / this tree (ROUNDS each), --clock cpu, REPEAT rounds
# usage (repository root): BASE=/tmp/base_refill57 ROUNDS=3 REPEAT=151 OUT=dir bash pieces.sh
base=${BASE:-/tmp/base_refill57}; out=${OUT:-benchmarks/results/refill57/pieces}
rounds=${ROUNDS:-3}; repeat=${REPEAT:-151}
mkdir -p "$out"
for i in $(seq 1 "$rounds"); do for t in base mine; do
  tree=$base; [ $t = mine ] && tree=$PWD
  PYTHONPATH=$tree python3 $tree/benchmarks/bench_vllm_reload.py --clock cpu --repeat $repeat \
    --pieces --json $out/pieces_${t}_$i.json > /dev/null 2>&1
  echo "$t $i load $(cut -d' ' -f1 /proc/loadavg)"
done; done
