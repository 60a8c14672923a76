#!/bin/bash
# alternating processes: the base tree (`git archive main` at e28fc154, extracted at $BASE) and
# this tree, each --repeat paired rounds of bench_vllm_reload.py; one summary line per process:
#   tree, round, paired ratio median, its 95 % interval, paired delta us median, load1 after
# usage (from the repository root):
#   PATH=/work/venv/bin:$PATH BASE=/tmp/base_reload54 ROUNDS=3 bash benchmarks/results/reload54/ab.sh
base=${BASE:-/tmp/base_reload54}
rounds=${ROUNDS:-3}
repeat=${REPEAT:-151}
out=benchmarks/results/reload54/ab
mkdir -p $out
for i in $(seq 1 $rounds); do for t in base mine; do
  tree=$base; [ $t = mine ] && tree=$PWD
  PYTHONPATH=$tree python3 $tree/benchmarks/bench_vllm_reload.py --clock cpu --repeat $repeat \
    --json $out/ab_${t}_$i.json > /dev/null 2>&1
  python3 -c "import json,os;d=json.load(open('$out/ab_${t}_$i.json'));p=d['paired'];print('$t',$i,p['ratio_median'],p['ratio_ci95'],p['delta_us_median'],os.getloadavg()[0])"
done; done
