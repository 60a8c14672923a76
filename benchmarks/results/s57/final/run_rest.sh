#!/bin/bash
# Session 28's final CPU figures after the compile pairs, base tree ($BASE: `git archive 270a66f5`
# extracted) against this tree, each alternating: `bench --workload scaling`, the vLLM reload A/B
# (4 processes an arm) and its pieces.
# usage (from the repository root): BASE=/tmp/base270 bash benchmarks/results/s57/final/run_rest.sh
set -u
o=benchmarks/results/s57/final
uptime > $o/load_start.txt
OUT=$o/scaling_ab bash benchmarks/results/s54/final/scaling_ab/run.sh
OUT=$o/vllm ROUNDS=4 REPEAT=151 MINE=mine bash benchmarks/results/s52/vllm/ab.sh > $o/vllm_ab_summary.txt
OUT=$o/vllm/pieces bash benchmarks/results/s54/vllm/pieces.sh > $o/vllm_pieces_table.txt
uptime > $o/load_end.txt
