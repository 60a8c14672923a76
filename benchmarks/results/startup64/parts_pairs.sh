#!/bin/bash
# alternating processes, base tree then this tree: parts.py (median of --compiles) per process
# usage: bash parts_pairs.sh PAIRS BASE_TREE THIS_TREE FUNCTION...
n=$1; base=$2; mine=$3; shift 3
here=$(cd "$(dirname "$0")" && pwd)
for i in $(seq "$n"); do
  for t in base mine; do
    tree=$base; [ "$t" = mine ] && tree=$mine
    echo "== pair $i $t"
    (cd /tmp && PYTHONPATH="$tree" python3 "$here/parts.py" --compiles 3 "$@")
  done
done
