#!/bin/bash
# On the H200: alternating rounds of the refill's host phases (each tree's own
# benchmarks/bench_refill_phases.py) and the public `derivgraph bench --device cuda --workload
# deepseek`, for trimmed trees ./.t_<commit> (git archive of derivgraph, specs, examples, the
# phases script). One JSON line per run: $OUT/phases.jsonl and $OUT/bench.jsonl.
# usage: SITE=/tmp/site bash device_refill_ab.sh ROUNDS COMMIT...
n=$1; shift
for i in $(seq "$n"); do
  for c in "$@"; do
    tree=$PWD/.t_$c
    for kind in phases bench; do
      if [ "$kind" = phases ]; then
        cmd=(python3 benchmarks/bench_refill_phases.py --device cuda --workload deepseek --repeat 41)
      else
        cmd=(python3 -m derivgraph.cli bench --device cuda --workload deepseek --format json)
      fi
      (cd "$tree" && PYTHONPATH="$tree${SITE:+:$SITE}" "${cmd[@]}" > /tmp/run.json 2>> "$OUT/err.txt")
      python3 -c "import json,sys; print(json.dumps({'tree': sys.argv[1], 'round': int(sys.argv[2]), 'data': json.load(open('/tmp/run.json'))}))" "$c" "$i" >> "$OUT/$kind.jsonl" || echo "failed $c $i $kind" >> "$OUT/err.txt"
    done
  done
done
