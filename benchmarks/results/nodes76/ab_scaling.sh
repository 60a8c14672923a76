#!/bin/bash
# alternating processes (order flips each round): scaling_bench at SIZE on the base tree and
# this tree; one JSON line per process: warm compile, young objects, their collection
# usage: bash ab_scaling.sh ROUNDS BASE_TREE THIS_TREE [SIZE]
n=$1; base=$2; mine=$3; size=${4:-100000}
for i in $(seq "$n"); do
  order="base mine"; [ $((i % 2)) = 0 ] && order="mine base"
  for t in $order; do
    tree=$base; [ "$t" = mine ] && tree=$mine
    (cd /tmp && PYTHONPATH="$tree" python3 -c "
import json, os
from derivgraph.tools.bench_scaling import scaling_bench
r = scaling_bench(($size,))['sizes'][0]
keep = ('compile_warm_s', 'gc_young_objects', 'gc_after_s', 'compile_with_gc_s', 'construct_s')
print(json.dumps({'tag': '$t', 'round': $i, **{k: r[k] for k in keep}, 'load1': os.getloadavg()[0]}))")
  done
done
