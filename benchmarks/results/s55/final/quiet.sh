#!/bin/bash
# After .ci/run finished (a quieter machine): the vLLM reload A/B and `bench --workload scaling`
# again, base ($BASE: e6b404cf) and this tree alternating.
# usage (from the repository root): BASE=/tmp/base27 bash benchmarks/results/s55/final/quiet.sh
set -u
o=benchmarks/results/s55/final
uptime > $o/quiet_load_start.txt
OUT=$o/vllm_quiet ROUNDS=3 REPEAT=151 MINE=mine bash benchmarks/results/s52/vllm/ab.sh > $o/vllm_ab_summary_quiet.txt
OUT=$o/scaling_ab_quiet bash benchmarks/results/s54/final/scaling_ab/run.sh
uptime > $o/quiet_load_end.txt
