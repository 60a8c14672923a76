#!/usr/bin/env bash
# Alternating A/B runs of the vLLM reload bench: the base tree (e24c044, a git archive) and this
# worktree, the same command, back to back; each run's JSON and its /usr/bin/time line kept.
#   bash benchmarks/results/plugin36/pairs.sh ROUNDS BASE_DIR OUT_DIR [bench args...]
set -euo pipefail
rounds=$1 base=$2 out=$3
shift 3
mine=$(cd "$(dirname "$0")/../../.." && pwd)
mkdir -p "$out"
out=$(cd "$out" && pwd)
for i in $(seq 1 "$rounds"); do
  for arm in base mine; do
    tree=$base; [ "$arm" = mine ] && tree=$mine
    (cd "$tree" && /usr/bin/time -f "%e %U %S" -o "$out/${arm}_$i.time" \
        python3 benchmarks/bench_vllm_reload.py "$@" --json "$out/${arm}_$i.json" \
        > /dev/null 2> "$out/${arm}_$i.err")
    python3 - "$out/${arm}_$i.json" "$arm" "$i" "$(cat "$out/${arm}_$i.time")" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
p = r["paired"]
print(sys.argv[2], sys.argv[3], "ratio", p["ratio_median"], p["ratio_ci95"], "delta_us",
      p["delta_us_median"], p["delta_us_ci95"], "off_ms", r["vllm_off_ms"], "load",
      r["load_after"], "time(e U S)", sys.argv[4])
PY
  done
done
