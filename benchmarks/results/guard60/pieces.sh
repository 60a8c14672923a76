#!/bin/bash
# Alternating --pieces runs, base tree then this tree (or the reverse with MINE_FIRST=1), one
# process each, 151 rounds, thread CPU clock:
#   PATH=/work/venv/bin:$PATH bash benchmarks/results/guard60/pieces.sh FIRST LAST OUTDIR
set -e
BASE=${BASE:-/tmp/base_guard60}
MINE=${MINE:-/work/wt/guard60}
OUT=$3
mkdir -p "$OUT"
for i in $(seq "$1" "$2"); do
  arms="base mine"
  [ -n "$MINE_FIRST" ] && arms="mine base"
  for arm in $arms; do
    tree=$BASE; [ "$arm" = mine ] && tree=$MINE
    PYTHONPATH=$tree python3 "$tree/benchmarks/bench_vllm_reload.py" --clock cpu --repeat 151 \
      --pieces --json "$OUT/pieces_${arm}_$i.json" > /dev/null 2>&1
    echo "$arm $i load $(cut -d' ' -f1-3 /proc/loadavg)"
  done
done
