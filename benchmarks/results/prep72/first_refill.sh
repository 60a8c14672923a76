#!/bin/bash
# first refill after compile (bench_first_refill.py, deepseek, CPU thread clock): alternating
# fresh processes, base tree then this tree, PAIRS times; one JSON line per process, tagged
# usage: bash first_refill.sh PAIRS BASE_TREE THIS_TREE > OUT.jsonl
n=$1; base=$2; mine=$3
for i in $(seq "$n"); do
  for t in base mine; do
    tree=$base; [ "$t" = mine ] && tree=$mine
    echo "{\"tag\": \"$t\", \"r\": $(cd /tmp && PYTHONPATH="$tree" python3 "$tree/benchmarks/bench_first_refill.py" --repeat 11)}"
  done
done
