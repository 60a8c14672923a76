#!/bin/bash
# prepare's parts, base and mine alternating in separate processes (N pairs, 3 compiles each)
# usage: bash parts_ab.sh N BASE MINE OUT.jsonl
n=$1; base=$2; mine=$3; out=$(realpath -m "$4")
here=$(cd "$(dirname "$0")" && pwd)
: > "$out"
for i in $(seq "$n"); do
  for t in "$base" "$mine"; do
    (cd /tmp && PYTHONPATH="$t" python3 "$here/prepare_parts.py" --repeat 3 --json "$out.tmp" > /dev/null)
    python3 -c "import json,sys; d=json.loads(open('$out.tmp').read().splitlines()[-1]); d['tree']='$t'; d['pair']=$i; print(json.dumps(d))" >> "$out"
    rm -f "$out.tmp"
  done
done
