#!/bin/bash
# The plain (stamping off) 100k compile, two trees alternating, one process each: process CPU s.
# usage: bash plain_pairs.sh BASE_TREE THIS_TREE PAIRS > plain_pairs.txt
base=$1; mine=$2; n=${3:-3}
code='
import gc, time
from derivgraph import planner
from derivgraph.compiler.stamp import stamping
from derivgraph.tools.bench_scaling import scaling_model, scaling_spec
spec = scaling_spec()
planner.compile_plan(scaling_model(250), [spec])  # warm-up
model = scaling_model(25000)
gc.collect()
with stamping(False):
    start = time.process_time()
    planner.compile_plan(model, [spec])
print(round(time.process_time() - start, 3))
'
for _ in $(seq "$n"); do
  for t in base mine; do
    tree=$base; [ "$t" = mine ] && tree=$mine
    echo "$t $(cd /tmp && PYTHONPATH="$tree" python3 -c "$code")"
  done
done
