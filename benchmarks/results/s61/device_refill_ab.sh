#!/bin/bash
# 20.2 on one device machine, base and this tree alternating: bench_refill_phases (cuda, deepseek)
# and `derivgraph bench --device cuda --workload deepseek`, PAIRS pairs each (base first, then this).
# usage on the device: source benchmarks/results/s44/refill_ab/setup.sh; OUT=$OUT BASE_REV=43868304 bash benchmarks/results/s61/device_refill_ab.sh
set -u
OUT=${OUT:?}; BASE_REV=${BASE_REV:-43868304}; PAIRS=${PAIRS:-3}
base=/tmp/base_refill; rm -rf "$base"; mkdir -p "$base"
git archive "$BASE_REV" | tar -x -C "$base" || exit 1
(cd "$base" && ln -sfn ../specs derivgraph/spec_library && ln -sfn ../examples derivgraph/examples)
{ nvidia-smi --query-gpu=name --format=csv,noheader; date -u; echo "base $BASE_REV"
  md5sum derivgraph/runtime/holders.py "$base/derivgraph/runtime/holders.py"; } > "$OUT/env.txt"
for i in $(seq "$PAIRS"); do
  for t in base mine; do
    tree=$PWD; [ "$t" = base ] && tree=$base
    (cd "$tree" && PYTHONPATH="$tree:$SITE" timeout 120 python3 benchmarks/bench_refill_phases.py --device cuda --workload deepseek --repeat 41) > "$OUT/refill_phases_${i}_$t.json" 2>/dev/null
    (cd "$tree" && PYTHONPATH="$tree:$SITE" timeout 120 python3 -m derivgraph.cli bench --device cuda --workload deepseek --format json) > "$OUT/deepseek_${i}_$t.json" 2>/dev/null
  done
done
tar czf /tmp/refill_ab.tgz -C "$OUT" . && rm -rf "${OUT:?}"/* && mv /tmp/refill_ab.tgz "$OUT/"
