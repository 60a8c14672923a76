#!/usr/bin/env bash
# The report is unchanged (scan32): JSON, SARIF and the text report (--show-info
# --show-declared, its elapsed seconds cut) of this tree against the base ba2b206 (git archive
# at /tmp/base_scan32), compared with cmp; then the JSON report with --jobs 1. Run with the
# system python3 (PYTHONPATH picks the tree), from the worktree root:
#   bash benchmarks/results/scan32/identical.sh > benchmarks/results/scan32/identical.txt 2>&1
set -u
HERE=$(pwd); OUT=$(mktemp -d); BASE=/tmp/base_scan32
for tree in "$BASE" "$HERE"; do
  name=$([ "$tree" = "$BASE" ] && echo base || echo this)
  (cd "$tree" && export PYTHONPATH="$tree" &&
   python3 -c "import derivgraph; print('$name:', derivgraph.__file__)" &&
   python3 -m derivgraph.cli audit static --package vllm --format json -o "$OUT/$name.json" &&
   python3 -m derivgraph.cli audit static --package vllm --format sarif -o "$OUT/$name.sarif" &&
   python3 -m derivgraph.cli audit static --package vllm --show-info --show-declared \
     -o "$OUT/$name.txt" &&
   python3 -m derivgraph.cli audit static --package vllm --jobs 1 --format json \
     -o "$OUT/$name.jobs1.json")
  sed -E 's/(spec\(s\)), [0-9.]+ s$/\1, <seconds> s/' "$OUT/$name.txt" > "$OUT/$name.cut.txt"
done
for ext in json sarif cut.txt jobs1.json; do
  if cmp "$OUT/base.$ext" "$OUT/this.$ext"; then echo "$ext: identical ($(wc -c < "$OUT/this.$ext") bytes)"; else echo "$ext: DIFFERENT"; fi
done
grep -c "" "$OUT/this.txt" | sed 's/^/text lines: /'
diff "$OUT/base.txt" "$OUT/this.txt" | sed 's/^/uncut text diff: /'
