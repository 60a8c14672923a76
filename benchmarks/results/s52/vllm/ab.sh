#!/bin/bash
# alternating processes: a base tree (a `git archive` extracted at $BASE) and this tree, each
# $REPEAT paired rounds of bench_vllm_reload.py; one summary line per process:
#   tree, round, paired ratio median, its 95 % interval, paired delta us median, load1 after
# usage (from the repository root):
#   BASE=/tmp/base52 [OUT=dir] [ROUNDS=2] [FIRST=1] [REPEAT=101] [MINE=mine-label] bash benchmarks/results/s52/vllm/ab.sh
# (session 25 ran it with the defaults and the label `main`; reload54 with ROUNDS=3 REPEAT=151
# OUT=benchmarks/results/reload54/ab MINE=mine)
base=${BASE:-/tmp/base52}
out=${OUT:-benchmarks/results/s52/vllm}
rounds=${ROUNDS:-2}; first=${FIRST:-1}; repeat=${REPEAT:-101}; mine=${MINE:-main}
mkdir -p "$out"
for i in $(seq "$first" $((first + rounds - 1))); do for t in base $mine; do
  tree=$base; [ $t = "$mine" ] && tree=$PWD
  PYTHONPATH=$tree python3 $tree/benchmarks/bench_vllm_reload.py --clock cpu --repeat $repeat \
    --json $out/ab_${t}_$i.json > /dev/null 2>&1
  python3 -c "import json,os;d=json.load(open('$out/ab_${t}_$i.json'));p=d['paired'];print('$t',$i,p['ratio_median'],p['ratio_ci95'],p['delta_us_median'],os.getloadavg()[0])"
done; done
