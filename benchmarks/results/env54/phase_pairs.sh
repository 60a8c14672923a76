#!/bin/bash
# per-phase A/B: bench_compile_phases.py at SIZE, base tree then this tree, N alternating pairs
# usage: bash phase_pairs.sh BASE MINE N SIZE OUTDIR
base=$1; mine=$2; n=$3; size=$4; out=$5
mkdir -p "$out"
for i in $(seq 1 "$n"); do
  for arm in base mine; do
    tree=$base; [ "$arm" = mine ] && tree=$mine
    (cd "$tree" && PYTHONPATH="$tree" python3 benchmarks/bench_compile_phases.py --size "$size" \
      --repeat 1 --json "$out/${arm}_$i.json" > "$out/${arm}_$i.txt")
  done
done
