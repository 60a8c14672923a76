#!/usr/bin/env bash
# One device call: new tree (this checkout) then base (.gpub/base.tgz) side by side, then the GPU round.
# usage (on the device): bash .gpub/final_round.sh   ($OUT set by the device tool)
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONPATH=/tmp/site
NEW=$PWD; BASE=/tmp/base; mkdir -p $BASE && tar -xf .gpub/base.tgz -C $BASE
for t in $NEW $BASE; do ln -sfn ../specs $t/derivgraph/spec_library; ln -sfn ../examples $t/derivgraph/examples; done
S=/tmp/sbs; R=/tmp/round; mkdir -p $S $R
run() { # run TREE NAME TIMEOUT CMD...
  local tree=$1 name=$2 lim=$3; shift 3
  (cd $tree && PYTHONPATH=$tree:/tmp/site timeout $lim "$@" > $S/$name.json 2> $S/$name.err; echo "$name rc=$?" >> $S/rc.txt)
}
if [ "${SBS:-1}" = 1 ]; then
for i in 1 2; do
  for side in new base; do
    tree=$NEW; [ $side = base ] && tree=$BASE
    run $tree ds_cuda_${side}_$i 120 python3 -m derivgraph.cli bench --device cuda --workload deepseek --format json
    run $tree ref_cpu_${side}_$i 120 python3 -m derivgraph.cli bench --device cpu --workload reference --format json
    run $tree phases_100k_${side}_$i 150 python3 benchmarks/bench_compile_phases.py --size 100000 --repeat 3 --json $S/phases_100k_${side}_$i.json2
    run $tree scaling_${side}_$i 150 python3 -m derivgraph.cli bench --workload scaling --format json
  done
done
tar -czf $OUT/sbs.tgz -C /tmp sbs
fi
if [ "${ROUND:-1}" = 1 ]; then
  (cd $NEW && OUT=$R bash benchmarks/gpu_round.sh > $R/round_stdout.txt 2>&1
   for i in 1 2 3; do PYTHONPATH=$NEW:/tmp/site timeout 90 python3 benchmarks/bench_first_refill.py --device cuda --workload deepseek --repeat 31 --capture > $R/first_refill_cuda_$i.json 2>> $R/extra.err; done
   PYTHONPATH=$NEW:/tmp/site timeout 120 python3 benchmarks/bench_refill_phases.py --device cuda --workload deepseek --repeat 41 > $R/refill_phases_cuda.txt 2>> $R/extra.err)
fi
tar -czf $OUT/round.tgz -C /tmp round
ls -la $OUT
