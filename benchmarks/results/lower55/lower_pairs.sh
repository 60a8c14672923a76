#!/bin/bash
# alternating processes, base tree then this tree (order swapped every other pair):
# bash lower_pairs.sh PAIRS BASE MINE [REPEAT] > out.jsonl   (PATH with the venv's python3)
pairs=$1; base=$2; mine=$3; repeat=${4:-3}
here=$(cd "$(dirname "$0")" && pwd)
for i in $(seq 1 "$pairs"); do
  if [ $((i % 2)) -eq 1 ]; then order="base mine"; else order="mine base"; fi
  for arm in $order; do
    tree=$base; [ "$arm" = mine ] && tree=$mine
    (cd /tmp && PYTHONPATH="$tree" python3 "$here/lower_phases.py" --repeat "$repeat" --tag "$arm")
  done
done
