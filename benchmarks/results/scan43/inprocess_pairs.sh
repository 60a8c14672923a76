#!/usr/bin/env bash
# In-process scans (inprocess_cpu.py), a base tree and this tree alternating (base first in odd
# pairs), N pairs, with the 1-minute load before each run:
#   bash benchmarks/results/scan43/inprocess_pairs.sh N BASE_TREE [--jobs J] > benchmarks/results/scan43/inprocess_pairs.txt
set -u
n="${1:-6}"; base="${2:-/tmp/base_scan43}"; shift 2; here="$(cd "$(dirname "$0")/../../.." && pwd)"
script="$here/benchmarks/results/scan43/inprocess_cpu.py"
echo "# $(date -u +%FT%TZ) base=$base scan43=$here ($(git -C "$here" rev-parse --short HEAD))"
for i in $(seq 1 "$n"); do
  order="base scan43"; [ $((i % 2)) -eq 0 ] && order="scan43 base"
  for tree in $order; do
    dir=$here; [ "$tree" = base ] && dir=$base
    load=$(cut -d' ' -f1 /proc/loadavg)
    echo "$tree pair=$i load=$load $(cd /tmp && PYTHONPATH=$dir /work/venv/bin/python "$script" "$@")"
  done
done
