#!/usr/bin/env bash
# Alternating runs of the refill phases bench (this tree's script) over several trees, same moment.
#   PATH=/work/venv/bin:$PATH bash benchmarks/results/refill43/pairs.sh ROUNDS OUT_DIR name=TREE...
# Each run: OUT_DIR/<name>_<round>.json (bench_refill_phases.py --workload deepseek --repeat 41
# --clock cpu), the tree on PYTHONPATH; a line per run on stdout with the 1-minute load.
set -euo pipefail
rounds=$1 out=$2
shift 2
script=$(cd "$(dirname "$0")/../.." && pwd)/bench_refill_phases.py
mkdir -p "$out"
out=$(cd "$out" && pwd)
for i in $(seq 1 "$rounds"); do
  for arm in "$@"; do
    name=${arm%%=*} tree=${arm#*=}
    (cd "$tree" && PYTHONPATH="$tree" python3 "$script" --workload deepseek --repeat 41 \
        --clock cpu --json "$out/${name}_$i.json" > /dev/null)
    echo "$i $name load $(cut -d' ' -f1 /proc/loadavg)"
  done
done
