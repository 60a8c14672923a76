#!/bin/bash
# CPU reload bench (derivgraph bench --device cpu --workload W --format json), base tree and this
# tree in alternating processes (the first of each pair alternating too); one JSON line per run,
# tagged.  usage: bash reload_pairs.sh PAIRS BASE_TREE THIS_TREE WORKLOAD
n=$1; base=$2; mine=$3; w=$4
for i in $(seq "$n"); do
  order="base mine"; [ $((i % 2)) = 0 ] && order="mine base"
  for t in $order; do
    tree=$base; [ "$t" = mine ] && tree=$mine
    (cd /tmp && PYTHONPATH="$tree" python3 -m derivgraph.cli bench --device cpu --workload "$w" \
      --format json) | python3 -c "import json,os,sys; r=json.loads(sys.stdin.read()); r.pop('runs_ms',None); print(json.dumps({'tag':'$t','workload':'$w','load1':os.getloadavg()[0],**r}))"
  done
done
