#!/bin/bash
# alternating processes, base tree then this tree: deps_phases.py, one JSON line each
# usage: bash phases_pairs.sh PAIRS BASE_TREE THIS_TREE [SIZE]
n=$1; base=$2; mine=$3; size=${4:-100000}
here=$(cd "$(dirname "$0")" && pwd)
for i in $(seq "$n"); do
  for t in base mine; do
    tree=$base; [ "$t" = mine ] && tree=$mine
    (cd /tmp && PYTHONPATH="$tree" python3 "$here/deps_phases.py" --size "$size" --repeat 3 --tag "$t")
  done
done
