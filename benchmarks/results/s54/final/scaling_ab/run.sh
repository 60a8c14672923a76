#!/bin/bash
# `derivgraph bench --workload scaling`, the base tree ($BASE) and this tree alternating, twice
# usage (from the repository root): BASE=/tmp/base55 [OUT=DIR] bash benchmarks/results/s54/final/scaling_ab/run.sh
out=${OUT:-benchmarks/results/s54/final/scaling_ab}; mkdir -p "$out"
for i in 1 2; do for t in base mine; do
  tree=$BASE; [ $t = mine ] && tree=$PWD
  (cd "$tree" && PYTHONPATH=$tree python3 -m derivgraph.cli bench --workload scaling --format json) > $out/scaling_${t}_$i.json
done; done
