#!/usr/bin/env bash
# The lead's in-process profile (/work/signals/old31/scan31_phases.py) on the base
# (/tmp/base_scan34) and this tree, alternating, N pairs, with the load:
# bash benchmarks/results/scan34/profile_pairs.sh N
set -u
n="${1:-4}"; here="$(cd "$(dirname "$0")/../../.." && pwd)"; base=/tmp/base_scan34
for i in $(seq 1 "$n"); do
  for tree in base branch; do
    dir=$here; [ "$tree" = base ] && dir=$base
    echo "== $tree pair=$i load=$(cut -d' ' -f1 /proc/loadavg)"
    (cd "$dir" && PYTHONPATH=$dir python3 /work/signals/old31/scan31_phases.py)
  done
done
