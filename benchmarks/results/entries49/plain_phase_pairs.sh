#!/bin/bash
# alternating pairs of the plain (stamping off) compile with its phases: base tree, then this
# tree; one JSON line per compile (summarize with compile36/summarize.py)
# usage: bash plain_phase_pairs.sh PAIRS BASE_TREE THIS_TREE SIZE > plain_phase_pairs.jsonl
n=$1; base=$2; mine=$3; size=${4:-100000}
here=$(cd "$(dirname "$0")/../compile36" && pwd)
for i in $(seq "$n"); do
  for t in base mine; do
    tree=$base; [ "$t" = mine ] && tree=$mine
    (cd "$tree/benchmarks" && PYTHONPATH="$tree" python3 "$here/stamped_phases.py" --plain --size "$size" --repeat 1 --tag "$t")
  done
done
