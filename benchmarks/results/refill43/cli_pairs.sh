#!/usr/bin/env bash
# Alternating runs of the public bench (derivgraph bench --workload deepseek --format json) over
# several trees, same moment; each tree on PYTHONPATH, its own CLI.
#   PATH=/work/venv/bin:$PATH bash benchmarks/results/refill43/cli_pairs.sh ROUNDS OUT_DIR name=TREE...
set -euo pipefail
rounds=$1 out=$2
shift 2
mkdir -p "$out"
out=$(cd "$out" && pwd)
for i in $(seq 1 "$rounds"); do
  for arm in "$@"; do
    name=${arm%%=*} tree=${arm#*=}
    (cd "$tree" && PYTHONPATH="$tree" python3 -m derivgraph.cli bench --workload deepseek \
        --format json > "$out/${name}_$i.json")
    echo "$i $name load $(cut -d' ' -f1 /proc/loadavg)"
  done
done
