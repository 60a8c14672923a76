#!/bin/bash
# three arms in alternating processes, this tree first: mine, base, mine with the joint check
# off (joint_off/sitecustomize.py on PYTHONPATH); ROUNDS rounds of REPEAT paired reloads each
# usage (repository root): BASE=/tmp/base_refill57 ROUNDS=2 REPEAT=101 OUT=dir bash ab3.sh
base=${BASE:-/tmp/base_refill57}; out=${OUT:-benchmarks/results/refill57/ab3}
rounds=${ROUNDS:-2}; repeat=${REPEAT:-101}
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$out"
for i in $(seq 1 "$rounds"); do for t in mine base off; do
  tree=$PWD; path=$PWD
  [ $t = base ] && tree=$base && path=$base
  [ $t = off ] && path=$here/joint_off:$PWD
  PYTHONPATH=$path python3 $tree/benchmarks/bench_vllm_reload.py --clock cpu --repeat $repeat \
    --json $out/ab_${t}_$i.json > /dev/null 2>&1
  python3 -c "import json,os;d=json.load(open('$out/ab_${t}_$i.json'));p=d['paired'];print('$t',$i,p['ratio_median'],p['ratio_ci95'],p['delta_us_median'],os.getloadavg()[0])"
done; done
