#!/bin/bash
# alternating processes: base tree, then this tree; one JSON line per build_graph
# usage: bash build_ab.sh PAIRS BASE_TREE THIS_TREE
here=$(cd "$(dirname "$0")" && pwd)
for i in $(seq "$1"); do
  for t in base mine; do
    tree=$2; [ "$t" = mine ] && tree=$3
    (cd /tmp && PYTHONPATH="$tree" python3 "$here/build_ab.py" "$t")
  done
done
