#!/bin/bash
# Alternating `derivgraph bench --device cuda --workload deepseek` runs, the base tree and this
# tree, one process each; JSON per run under $OUT/cuda_ab/.
# usage: SITE=/tmp/site bash device_cuda_ab.sh ROUNDS BASE_TREE THIS_TREE
n=$1; base=$2; mine=$3
mkdir -p "$OUT/cuda_ab"
for i in $(seq "$n"); do
  for t in base mine; do
    tree=$base; [ "$t" = mine ] && tree=$mine
    (cd "$tree" && PYTHONPATH="$tree${SITE:+:$SITE}" python3 -m derivgraph.cli bench --device cuda \
        --workload deepseek --format json > "$OUT/cuda_ab/${t}_$i.json" 2> "$OUT/cuda_ab/${t}_$i.err")
  done
done
