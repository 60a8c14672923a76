#!/usr/bin/env bash
# The report is unchanged: JSON, SARIF and text (--show-info --show-declared) of this tree
# against the base (f43b165, git archive at /tmp/base_scan29), compared with cmp; the text's
# summary line ends with the scan's elapsed seconds, which are cut before comparing.
#   bash benchmarks/results/scan29/identical.sh > benchmarks/results/scan29/identical.txt 2>&1
set -u
HERE=$(pwd); OUT=$(mktemp -d)
for tree in /tmp/base_scan29 "$HERE"; do
  name=$([ "$tree" = /tmp/base_scan29 ] && echo base || echo this)
  (cd "$tree" && export PYTHONPATH="$tree" &&
   python3 -m derivgraph.cli audit static --package vllm --format json -o "$OUT/$name.json" &&
   python3 -m derivgraph.cli audit static --package vllm --format sarif -o "$OUT/$name.sarif" &&
   python3 -m derivgraph.cli audit static --package vllm --show-info --show-declared \
     -o "$OUT/$name.txt")
  sed -E 's/(spec\(s\)), [0-9.]+ s$/\1, <seconds> s/' "$OUT/$name.txt" > "$OUT/$name.cut.txt"
done
for ext in json sarif cut.txt; do
  if cmp "$OUT/base.$ext" "$OUT/this.$ext"; then echo "$ext: identical ($(wc -c < "$OUT/this.$ext") bytes)"; else echo "$ext: DIFFERENT"; fi
done
grep -c "" "$OUT/this.txt" | sed 's/^/text lines: /'
diff "$OUT/base.txt" "$OUT/this.txt" | sed 's/^/uncut text diff: /'
