#!/bin/bash
# alternating processes: base tree, then this tree; one JSON line each
# usage: bash after_compile.sh PAIRS BASE_TREE THIS_TREE
n=$1; base=$2; mine=$3
here=$(cd "$(dirname "$0")" && pwd)
for i in $(seq "$n"); do
  for t in base mine; do
    tree=$base; [ "$t" = mine ] && tree=$mine
    PYTHONPATH="$tree" /work/venv/bin/python "$here/after_compile.py" --tag "$t"
  done
done
