#!/bin/bash
# byte-identity of this tree's JSON and SARIF vLLM reports against the branch point's
cd /work/wt/scan21d
for f in json sarif; do
  for j in 1 2; do
    PYTHONPATH=$PWD python3 -m derivgraph.cli audit static --package vllm --format $f --jobs $j --output /tmp/s21/this.$j.$f >/dev/null
    cmp /tmp/s21/base.$f /tmp/s21/this.$j.$f && echo "IDENTICAL $f jobs=$j"
  done
done
