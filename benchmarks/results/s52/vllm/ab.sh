#!/bin/bash
# alternating processes: the start tree (base) and main, each 101 paired rounds
cd /work/main  # run from the repository root; base = git archive 8ac8bd2 into /tmp/base52
for i in 1 2; do for t in base main; do
  tree=/tmp/base52; [ $t = main ] && tree=/work/main
  PYTHONPATH=$tree /work/venv/bin/python $tree/benchmarks/bench_vllm_reload.py --clock cpu --repeat 101 --json benchmarks/results/s52/vllm/ab_${t}_$i.json > /dev/null 2>&1
  python3 -c "import json,os;d=json.load(open('benchmarks/results/s52/vllm/ab_${t}_$i.json'));p=d['paired'];print('$t',$i,p['ratio_median'],p['ratio_ci95'],p['delta_us_median'],os.getloadavg()[0])"
done; done
