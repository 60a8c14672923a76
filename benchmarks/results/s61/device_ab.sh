#!/bin/bash
# 20.4 on the device's host CPU, base and this tree in one call: whole-compile pairs at 100k
# (alternating processes, CPU seconds) and `bench --workload scaling` twice each (ABBA).
# usage on the device: source benchmarks/results/s44/refill_ab/setup.sh; OUT=$OUT BASE_REV=43868304 bash benchmarks/results/s61/device_ab.sh
set -u
OUT=${OUT:?}; BASE_REV=${BASE_REV:-43868304}; PAIRS=${PAIRS:-4}
base=/tmp/base_ab; rm -rf "$base"; mkdir -p "$base"
git archive "$BASE_REV" | tar -x -C "$base" || exit 1
(cd "$base" && ln -sfn ../specs derivgraph/spec_library && ln -sfn ../examples derivgraph/examples)
{ nproc; date -u; echo "base $BASE_REV"; md5sum derivgraph/planner.py derivgraph/runtime/holders.py "$base/derivgraph/planner.py"; } > "$OUT/env_ab.txt"
SITE=$SITE bash benchmarks/results/compile36/pairs.sh "$PAIRS" "$base" "$PWD" 100000 > "$OUT/pairs.jsonl" 2> "$OUT/pairs.err"
i=0
for t in base mine mine base; do
  i=$((i + 1)); tree=$PWD; [ "$t" = base ] && tree=$base
  (cd "$tree" && PYTHONPATH="$tree:$SITE" timeout 200 python3 -m derivgraph.cli bench --workload scaling --format json) > "$OUT/scaling_${i}_$t.json" 2> "$OUT/scaling_${i}_$t.err"
done
ls "$OUT"
# added after the session-30 run (the device returns at most 8 files; that run lost two scaling files)
tar czf /tmp/ab.tgz -C "$OUT" . && rm -rf "${OUT:?}"/* && mv /tmp/ab.tgz "$OUT/"
