#!/bin/bash
# --pieces runs of bench_vllm_reload.py, base tree ($BASE) and this tree alternating, 101 rounds
# each; then one table of every piece's min and median side by side (reload54's pieces_table.py)
# usage (from the repository root): BASE=/tmp/base55 [OUT=DIR] bash benchmarks/results/s54/vllm/pieces.sh
out=${OUT:-benchmarks/results/s54/vllm/pieces}
mkdir -p $out
for i in 1 2; do for t in base mine; do
  tree=$BASE; [ $t = mine ] && tree=$PWD
  PYTHONPATH=$tree python3 $tree/benchmarks/bench_vllm_reload.py --clock cpu --repeat 101 --pieces \
    --json $out/pieces_${t}_$i.json > /dev/null 2>&1
done; done
python3 benchmarks/results/reload54/pieces_table.py $out/pieces_base_1.json $out/pieces_mine_1.json \
  $out/pieces_base_2.json $out/pieces_mine_2.json
