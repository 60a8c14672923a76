#!/usr/bin/env bash
# Alternating process pairs of deepseek_ab.py: base tree, then this tree (order swapped every
# other pair). Usage: deepseek_pairs.sh PAIRS BASE MINE LAYERS REPEATS > file.jsonl
set -eu
here=$(cd "$(dirname "$0")" && pwd)
for i in $(seq 1 "$1"); do
  if [ $((i % 2)) -eq 1 ]; then arms="$2 $3"; else arms="$3 $2"; fi
  for tree in $arms; do PYTHONPATH=$tree python3 "$here/deepseek_ab.py" "$4" "$5"; done
done
