#!/bin/bash
# This tree's vLLM reload A/B in three arms alternating, 3 processes each: as is, the guard's
# whole proof off (whole_off/sitecustomize.py), the joint address check off
# (refill57/joint_off/sitecustomize.py); one summary line a process (arm, round, paired ratio
# median, paired delta us median, load1). usage (from the repository root):
#   bash benchmarks/results/s57/final/vllm_arms.sh > benchmarks/results/s57/final/vllm_arms_summary.txt
o=benchmarks/results/s57/final/vllm_arms; mkdir -p $o
for i in 1 2 3; do for arm in final whole_off joint_off; do
  pp=$PWD; [ $arm = whole_off ] && pp=$PWD/benchmarks/results/s57/final/whole_off:$PWD
  [ $arm = joint_off ] && pp=$PWD/benchmarks/results/refill57/joint_off:$PWD
  PYTHONPATH=$pp python3 benchmarks/bench_vllm_reload.py --clock cpu --repeat 151 --json $o/ab_${arm}_$i.json > /dev/null 2>&1
  python3 -c "import json,os;d=json.load(open('$o/ab_${arm}_$i.json'));p=d['paired'];print('$arm',$i,p['ratio_median'],p['delta_us_median'],round(os.getloadavg()[0],2))"
done; done
