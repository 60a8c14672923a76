#!/bin/bash
# alternate base / branch: phases then scaling, two rounds
OUT=/work/wt/compile20d/benchmarks/results/compile20d
for round in 1 2; do
  for tree in base branch; do
    if [ $tree = base ]; then D=/tmp/base_compile20d; else D=/work/wt/compile20d; fi
    echo "$(date -u +%FT%TZ) phases $tree $round $(uptime)" >> $OUT/load.log
    (cd $D && PYTHONPATH=$PWD python3 benchmarks/bench_compile_phases.py --size 100000 --repeat 1 --json $OUT/phases_100k_${tree}_${round}.json > /dev/null 2>&1)
  done
  for tree in base branch; do
    if [ $tree = base ]; then D=/tmp/base_compile20d; else D=/work/wt/compile20d; fi
    echo "$(date -u +%FT%TZ) scaling $tree $round $(uptime)" >> $OUT/load.log
    (cd $D && PYTHONPATH=$PWD python3 -m derivgraph.cli bench --workload scaling --format json > $OUT/scaling_${tree}_${round}.json 2>/dev/null)
  done
done
echo "$(date -u +%FT%TZ) done $(uptime)" >> $OUT/load.log
