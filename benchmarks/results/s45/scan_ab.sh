#!/bin/bash
# The static scan of the installed vLLM, two trees alternating, one job each (CPU seconds).
# usage: bash scan_ab.sh BASE_TREE NEW_TREE PAIRS > scan_ab.txt
# prints per run: tree, user s, system s, wall s (GNU time); then "done".
# s45/scan_ab_vocab.txt: BASE = git archive cb173a2, NEW = c39a788 (the vocabulary change), 3 pairs.
base=$1; new=$2; pairs=${3:-3}
out=$(mktemp -d)
for _ in $(seq "$pairs"); do
  for t in base new; do
    tree=$base; [ "$t" = new ] && tree=$new
    /usr/bin/time -f "$t %U %S %e" env PYTHONPATH="$tree" python3 -m derivgraph.cli audit static \
      --package vllm --format json --jobs 1 -o "$out/$t.json" 2>&1 >/dev/null | tail -1
  done
done
rm -rf "$out"
echo done
