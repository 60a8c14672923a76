#!/usr/bin/env bash
# Finish the side-by-side loop of final_round.sh (round 2: the base's four runs and the new tree's scaling).
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
NEW=$PWD; BASE=/tmp/base; mkdir -p $BASE && tar -xf .gpub/base.tgz -C $BASE
for t in $NEW $BASE; do ln -sfn ../specs $t/derivgraph/spec_library; ln -sfn ../examples $t/derivgraph/examples; done
S=/tmp/sbs2; mkdir -p $S
run() { local tree=$1 name=$2 lim=$3; shift 3
  (cd $tree && PYTHONPATH=$tree:/tmp/site timeout $lim "$@" > $S/$name.json 2> $S/$name.err; echo "$name rc=$?" >> $S/rc.txt); tar -czf $OUT/sbs2.tgz -C /tmp sbs2; }
run $NEW scaling_new_2 150 python3 -m derivgraph.cli bench --workload scaling --format json
run $BASE ds_cuda_base_2 120 python3 -m derivgraph.cli bench --device cuda --workload deepseek --format json
run $BASE ref_cpu_base_2 120 python3 -m derivgraph.cli bench --device cpu --workload reference --format json
run $BASE phases_100k_base_2 150 python3 benchmarks/bench_compile_phases.py --size 100000 --repeat 3 --json $S/phases_100k_base_2.json2
run $BASE scaling_base_2 150 python3 -m derivgraph.cli bench --workload scaling --format json
cat $S/rc.txt
