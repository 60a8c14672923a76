#!/bin/bash
# usage: phases_pairs.sh BASE_TREE THIS_TREE PAIRS  -- alternating processes, base first
here=$(cd "$(dirname "$0")" && pwd)
for i in $(seq 1 "$3"); do
  PYTHONPATH="$1" python3 "$here/phases_ab.py" --label base
  PYTHONPATH="$2" python3 "$here/phases_ab.py" --label mine
done
