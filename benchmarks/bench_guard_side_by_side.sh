#!/usr/bin/env bash
# The guard's cost beside a base tree, alternating one process per tree and round, CPU clock:
#   benchmarks/bench_guard_side_by_side.sh BASE_DIR ROUNDS OUT_DIR
# (BASE_DIR: e.g. `git archive main | tar -x -C /tmp/base`). Each tree runs its own
# bench_guard.py and bench_guard_parts.py; OUT_DIR gets one JSON per run, with the load.
set -euo pipefail
base=$(cd "$1" && pwd); rounds=$2; out=$3
here=$(cd "$(dirname "$0")/.." && pwd)
mkdir -p "$out"
load() { uptime | sed 's/.*load average: //'; }
for r in $(seq 1 "$rounds"); do
  for tree in branch base; do
    root=$here; [ "$tree" = base ] && root=$base
    for bench in bench_guard bench_guard_parts; do
      args=(--repeat 9); [ "$bench" = bench_guard ] && args+=(--layers 61 --clock cpu --json)
      before=$(load); start=$(date -u +%FT%TZ)
      result=$(cd "$root" && PYTHONPATH=$root python3 "$root/benchmarks/$bench.py" "${args[@]}")
      printf '{"tree": "%s", "round": %s, "bench": "%s", "start": "%s", "load_before": "%s", "load_after": "%s", "result": %s}\n' \
        "$tree" "$r" "$bench" "$start" "$before" "$(load)" "$result" > "$out/$tree.$bench.$r.json"
    done
  done
done
