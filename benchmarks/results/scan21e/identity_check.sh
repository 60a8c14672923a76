#!/bin/bash
# byte-identity of this tree's JSON and SARIF vLLM reports against the branch point's (9c61c38)
# base reports: cd /tmp/base_scan21e && PYTHONPATH=$PWD python3 -m derivgraph.cli audit static
#   --package vllm --format {json,sarif} --jobs 1 --output /tmp/ref21e/base.{json,sarif}
cd /work/wt/scan21e
git log --oneline -1
for f in json sarif; do
  for j in 1 2; do
    PYTHONPATH=$PWD python3 -m derivgraph.cli audit static --package vllm --format $f --jobs $j --output /tmp/ref21e/this.$j.$f >/dev/null
    cmp /tmp/ref21e/base.$f /tmp/ref21e/this.$j.$f && echo "IDENTICAL $f jobs=$j $(sha256sum < /tmp/ref21e/this.$j.$f | cut -c1-16) $(stat -c %s /tmp/ref21e/this.$j.$f) B"
  done
done
sha256sum /tmp/ref21e/base.json /tmp/ref21e/base.sarif | cut -c1-16
