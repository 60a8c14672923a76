#!/bin/bash
# alternating processes: the start tree (base, `git archive 8ac8bd2` extracted at $BASE) and this
# tree, each 101 paired rounds of bench_vllm_reload.py; one summary line per process:
#   tree, round, paired ratio median, its 95 % interval, paired delta us median, load1 after
# usage (from the repository root): BASE=/tmp/base52 bash benchmarks/results/s52/vllm/ab.sh
base=${BASE:-/tmp/base52}
out=benchmarks/results/s52/vllm
for i in 1 2; do for t in base main; do
  tree=$base; [ $t = main ] && tree=$PWD
  PYTHONPATH=$tree python3 $tree/benchmarks/bench_vllm_reload.py --clock cpu --repeat 101 \
    --json $out/ab_${t}_$i.json > /dev/null 2>&1
  python3 -c "import json,os;d=json.load(open('$out/ab_${t}_$i.json'));p=d['paired'];print('$t',$i,p['ratio_median'],p['ratio_ci95'],p['delta_us_median'],os.getloadavg()[0])"
done; done
