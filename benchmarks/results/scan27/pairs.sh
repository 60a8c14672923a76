#!/usr/bin/env bash
# Cold CLI runs, alternating base (dd9f38c, git archive at /tmp/base_scan27) and this tree, 5 pairs,
# each with the 1-minute load before it. Run from the repository root:
#   bash benchmarks/results/scan27/pairs.sh > benchmarks/results/scan27/pairs.txt 2>&1
HERE=$(pwd)
for n in 1 2 3 4 5; do
  for tree in /tmp/base_scan27 "$HERE"; do
    name=$([ "$tree" = /tmp/base_scan27 ] && echo base || echo scan27)
    echo "pair $n $name $(uptime | sed 's/.*load average: //')"
    (cd "$tree" && PYTHONPATH="$tree" /usr/bin/time -f "pair $n $name %e s wall %U s user %S s sys" \
      python3 -m derivgraph.cli audit static --package vllm --format json -o /dev/null)
  done
done
