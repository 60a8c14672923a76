#!/bin/bash
# Session 27's final CPU figures, base tree ($BASE: `git archive e6b404cf` extracted) against this
# tree, each alternating: whole-compile pairs, `bench --workload scaling`, the vLLM reload A/B and
# its pieces. usage (from the repository root): BASE=/tmp/base27 bash benchmarks/results/s55/final/run_all.sh
set -u
o=benchmarks/results/s55/final
uptime > $o/load_start.txt
bash benchmarks/results/compile36/pairs.sh 4 "$BASE" "$PWD" 100000 > $o/compile_pairs_e6b404cf_vs_final.jsonl
python3 benchmarks/results/compile36/summarize.py $o/compile_pairs_e6b404cf_vs_final.jsonl > $o/compile_pairs_e6b404cf_vs_final.summary.txt
OUT=$o/scaling_ab bash benchmarks/results/s54/final/scaling_ab/run.sh
OUT=$o/vllm ROUNDS=3 REPEAT=151 MINE=mine bash benchmarks/results/s52/vllm/ab.sh > $o/vllm_ab_summary.txt
OUT=$o/vllm/pieces bash benchmarks/results/s54/vllm/pieces.sh > $o/vllm_pieces_table.txt
uptime > $o/load_end.txt
