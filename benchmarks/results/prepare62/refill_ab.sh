#!/bin/bash
# deepseek's refill phases (CPU clock), base and mine alternating in separate processes
# usage: PATH=/work/venv/bin:$PATH bash refill_ab.sh N BASE MINE OUT.jsonl
n=$1; base=$2; mine=$3; out=$(realpath -m "$4")
here=$(cd "$(dirname "$0")/../../.." && pwd)
: > "$out"
for i in $(seq "$n"); do
  for t in "$base" "$mine"; do
    (cd /tmp && PYTHONPATH="$t" python3 "$here/benchmarks/bench_refill_phases.py" --device cpu \
      --workload deepseek --repeat 41 --clock cpu --json "$out.tmp" > /dev/null)
    python3 -c "import json; d=json.load(open('$out.tmp')); d['tree']='$t'; d['pair']=$i; print(json.dumps(d))" >> "$out"
    rm -f "$out.tmp"
  done
done
