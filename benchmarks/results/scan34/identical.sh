#!/usr/bin/env bash
# The report on the base (git archive 29893d9 at /tmp/base_scan34) and on this tree: JSON with
# --show-info (compare_reports.py and cmp), SARIF, and --jobs 1 JSON.
# bash benchmarks/results/scan34/identical.sh
set -u
here="$(cd "$(dirname "$0")/../../.." && pwd)"; base=/tmp/base_scan34; out=/tmp/scan34_identical
mkdir -p $out
for tree in base new; do
  dir=$here; [ "$tree" = base ] && dir=$base
  (cd "$dir" && PYTHONPATH=$dir python3 -m derivgraph.cli audit static --package vllm --format json --show-info -o $out/$tree.json)
  (cd "$dir" && PYTHONPATH=$dir python3 -m derivgraph.cli audit static --package vllm --format sarif -o $out/$tree.sarif)
  (cd "$dir" && PYTHONPATH=$dir python3 -m derivgraph.cli audit static --package vllm --format json --jobs 1 -o $out/${tree}_j1.json)
done
python3 "$here/benchmarks/results/readers31/compare_reports.py" $out/base.json $out/new.json
for f in .json .sarif _j1.json; do
  python3 - "$out/base$f" "$out/new$f" <<'PY'
import json, sys
def load(p):
    d = json.load(open(p))
    if isinstance(d, dict):
        d.pop("seconds", None)
    return d
a, b = load(sys.argv[1]), load(sys.argv[2])
print(sys.argv[2].rsplit("/", 1)[1], "identical (seconds field cut)" if a == b else "DIFFERENT")
PY
done
