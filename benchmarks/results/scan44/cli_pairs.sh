#!/usr/bin/env bash
# Cold CLI scans of vLLM 0.33.0 (the lead's command, run from /tmp), a base tree and this tree
# (scan44: the same script as scan43/cli_pairs.sh, the row label scan44 and EXTRA="--jobs 2" etc. added to both sides)
# alternating (the base first in odd pairs, this tree first in even ones), N pairs; one line per
# run with the 1-minute load before it and wall, user, sys from /usr/bin/time:
#   bash benchmarks/results/scan44/cli_pairs.sh N BASE_TREE > benchmarks/results/scan44/cli_pairs.txt
set -u
n="${1:-6}"; base="${2:-/tmp/base_scan44}"; here="$(cd "$(dirname "$0")/../../.." && pwd)"
py="${PYTHON:-python3}"  # the interpreter with vLLM 0.33.0 installed
echo "# EXTRA=${EXTRA:-} $(date -u +%FT%TZ) base=$base ($(git -C /work/main rev-parse --short HEAD 2>/dev/null || echo ?)) scan44=$here ($(git -C "$here" rev-parse --short HEAD))"
for i in $(seq 1 "$n"); do
  order="base scan44"; [ $((i % 2)) -eq 0 ] && order="scan44 base"
  for tree in $order; do
    dir=$here; [ "$tree" = base ] && dir=$base
    load=$(cut -d' ' -f1 /proc/loadavg)
    t=$( { cd /tmp && PYTHONPATH=$dir /usr/bin/time -f '%e %U %S' $py -m derivgraph.cli audit static \
          --package vllm --format json -o /dev/null ${EXTRA:-}; } 2>&1 | tail -1)
    set -- $t
    cpu=$(echo "$2 + $3" | bc)
    echo "$tree pair=$i load=$load wall=$1 user=$2 sys=$3 user+sys=$cpu"
  done
done
