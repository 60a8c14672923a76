#!/usr/bin/env bash
# The report is unchanged: scan28's check (cmp of JSON, SARIF and the text report with its
# elapsed seconds cut) against the base 149d34a (git archive at /tmp/base_scan31), then the JSON
# report with --jobs 1, and with --changed-since HEAD on a git copy of vLLM 0.33.0 with three
# files touched (/tmp/s31_vllm_git: cp of site-packages/vllm, git init, commit, a comment
# appended to fp8.py, linear.py and fused_moe/layer.py). From the root:
#   bash benchmarks/results/scan31/identical.sh > benchmarks/results/scan31/identical.txt 2>&1
set -u
sed -e 's#/tmp/base_scan28#/tmp/base_scan31#g' benchmarks/results/scan28/identical.sh | bash
HERE=$(pwd); OUT=$(mktemp -d)
for tree in /tmp/base_scan31 "$HERE"; do
  name=$([ "$tree" = /tmp/base_scan31 ] && echo base || echo this)
  (cd "$tree" && export PYTHONPATH="$tree" &&
   python3 -m derivgraph.cli audit static --package vllm --jobs 1 --format json -o "$OUT/$name.jobs1.json" &&
   cd /tmp/s31_vllm_git && python3 -m derivgraph.cli audit static vllm --changed-since HEAD \
     --format json -o "$OUT/$name.changed.json")
done
for ext in jobs1.json changed.json; do
  if cmp "$OUT/base.$ext" "$OUT/this.$ext"; then echo "$ext: identical ($(wc -c < "$OUT/this.$ext") bytes)"; else echo "$ext: DIFFERENT"; fi
done
