#!/usr/bin/env bash
# review15: the stage-v12 draw script reproduces the committed v9, v10b, v11 and v12 raw draws
# byte for byte (run from the repository root; each draw takes minutes on a loaded machine).
set -u
tmp=$(mktemp -d)
for v in v9 v10b v11 v12; do
  cmd=$(python3 -c "import json;print(json.load(open('tests/resources/static_recall_outside_${v}_vllm_0.33.json'))['command'])")
  eval "$cmd" > "$tmp/$v.json"
  cmp "$tmp/$v.json" "tests/resources/static_recall_outside_${v}_draw.json" && echo "$v identical"
done
