#!/usr/bin/env bash
# Cold CLI scans of vLLM 0.33.0 by ONE tree (this one), `--jobs 1` and the default (two workers)
# alternating (jobs 1 first in odd pairs), N pairs; one line per run with the 1-minute load
# before it and wall, user, sys from /usr/bin/time (user+sys counts the workers):
#   PYTHON=/work/venv/bin/python bash benchmarks/results/scan44/jobs_pairs.sh N > FILE
set -u
n="${1:-4}"; here="$(cd "$(dirname "$0")/../../.." && pwd)"
py="${PYTHON:-python3}"
echo "# $(date -u +%FT%TZ) tree=$here ($(git -C "$here" rev-parse --short HEAD)) jobs 1 vs default"
for i in $(seq 1 "$n"); do
  order="1 default"; [ $((i % 2)) -eq 0 ] && order="default 1"
  for j in $order; do
    arg=""; [ "$j" = 1 ] && arg="--jobs 1"
    load=$(cut -d' ' -f1 /proc/loadavg)
    t=$( { cd /tmp && PYTHONPATH=$here /usr/bin/time -f '%e %U %S' $py -m derivgraph.cli audit static \
          --package vllm --format json -o /dev/null $arg; } 2>&1 | tail -1)
    set -- $t
    cpu=$(echo "$2 + $3" | bc)
    echo "jobs=$j pair=$i load=$load wall=$1 user=$2 sys=$3 user+sys=$cpu"
  done
done
