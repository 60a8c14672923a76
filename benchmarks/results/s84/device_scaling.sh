#!/bin/bash
# A lean device call for the end of a session with little device time left: 20.4's figure
# only, `derivgraph bench --workload scaling --sizes 100000` of this tree and of BASE_REV
# alternately (final, base, final, base), each JSON written as soon as it is done.
# usage on the device: source benchmarks/results/s44/refill_ab/setup.sh; OUT=$OUT BASE_REV=479807ae bash benchmarks/results/s84/device_scaling.sh
set -u
base=/tmp/base_scaling
mkdir -p "$base" && git archive "${BASE_REV:?}" | tar -x -C "$base"
(cd "$base" && ln -sfn ../specs derivgraph/spec_library && ln -sfn ../examples derivgraph/examples)
nproc > "$OUT/env.txt"; date >> "$OUT/env.txt"; echo "base $BASE_REV" >> "$OUT/env.txt"
i=0
for t in final base final base; do
  i=$((i+1)); tree=$PWD; [ $t = base ] && tree=$base
  (cd "$tree" && PYTHONPATH=$SITE:$tree python3 -m derivgraph.cli bench --workload scaling \
     --sizes 100000 --format json) > "$OUT/scaling_${i}_$t.json" 2> "$OUT/scaling_${i}_$t.err"
  echo "$i $t rc=$?"
done
