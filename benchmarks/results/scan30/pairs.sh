#!/usr/bin/env bash
# Cold CLI runs, alternating base (e138b65, git archive at /tmp/base_scan30) and this tree, N
# pairs (default 5), each with its start time and the load before it: scan28's script, rebased.
#   bash benchmarks/results/scan30/pairs.sh 5 > benchmarks/results/scan30/pairs.txt 2>&1
sed -e 's#/tmp/base_scan28#/tmp/base_scan30#g' -e 's/scan28 "\$THIS"/scan30 "$THIS"/' \
  benchmarks/results/scan28/pairs.sh | bash -s -- "${1:-5}"
