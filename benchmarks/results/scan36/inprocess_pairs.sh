#!/usr/bin/env bash
# An in-process profile SCRIPT run in a base tree and this tree alternating, N pairs, with the load:
#   bash benchmarks/results/scan36/inprocess_pairs.sh N BASE SCRIPT
# SCRIPT: benchmarks/results/scan36/parent_serial.py (the parent's CPU per phase, its gc
# collections) or benchmarks/results/scan31/scan31_phases.py (the phases' wall and CPU).
set -u
n="${1:-4}"; base="${2:-/tmp/base_scan36}"; here="$(cd "$(dirname "$0")/../../.." && pwd)"
script="$here/${3:-benchmarks/results/scan36/parent_serial.py}"
for i in $(seq 1 "$n"); do
  for tree in base scan36; do
    dir=$here; [ "$tree" = base ] && dir=$base
    echo "== $tree pair=$i load=$(cut -d' ' -f1 /proc/loadavg)"
    (cd "$dir" && PYTHONPATH=$dir python3 "$script" 2>&1)
  done
done
