#!/bin/bash
# The collector-debt row of `derivgraph bench --workload scaling` at 100k, ABAB in fresh
# processes: this session's bench (derivgraph/tools/bench_scaling.py, copied so that the base
# tree, whose bench lacks the fields, is timed by the same code) on each tree's compile_plan.
# usage: BASE=/tmp/base72 FINAL=/tmp/base76 bash gc_debt_ab.sh > gc_debt_ab.jsonl
# (/tmp/base72: git archive d4e0747f; /tmp/base76: git archive of the final library)
set -eu
here=$(cd "$(dirname "$0")/../../.." && pwd)
work=$(mktemp -d)
cp "$here/derivgraph/tools/bench_scaling.py" "$work/bench_scaling_copy.py"
for i in 1 2 3; do
  for t in "$BASE" "$FINAL"; do
    (cd /tmp && PYTHONPATH="$t:$work" python3 -c "
import json, bench_scaling_copy as b; r = b.scaling_bench((100000,))['sizes'][0]
print(json.dumps({'tree': '$(basename "$t")', 'round': $i, **{k: r[k] for k in ('construct_s', 'compile_warm_s', 'gc_young_objects', 'gc_after_s', 'compile_with_gc_s', 'compile_with_gc_over_construct')}}))")
  done
done
