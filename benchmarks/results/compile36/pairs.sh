#!/bin/bash
# alternating pairs: base tree, then this tree; one JSON line per compile
# usage: bash pairs.sh PAIRS BASE_TREE THIS_TREE SIZE   (SITE=DIR: appended to PYTHONPATH, e.g. the
# wheels installed with --target on the device)
n=$1; base=$2; mine=$3; size=${4:-100000}
here=$(cd "$(dirname "$0")" && pwd)
for i in $(seq "$n"); do
  for t in base mine; do
    tree=$base; [ "$t" = mine ] && tree=$mine
    (cd "$tree/benchmarks" && PYTHONPATH="$tree${SITE:+:$SITE}" python3 "$here/stamped_phases.py" --size "$size" --repeat 1 --tag "$t")
  done
done
