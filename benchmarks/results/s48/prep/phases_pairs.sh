#!/bin/bash
# usage: phases_pairs.sh BASE_TREE THIS_TREE PAIRS  -- alternating processes, base first
# (pass48's phases_ab.py, with the source check's phase printed too)
ab=$(cd "$(dirname "$0")/../../pass48" && pwd)/phases_ab.py
for i in $(seq 1 "$3"); do
  PYTHONPATH="$1" python3 "$ab" --label base --also "  prepare: sources_intact"
  PYTHONPATH="$2" python3 "$ab" --label mine --also "  prepare: sources_intact"
done
