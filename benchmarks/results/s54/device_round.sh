#!/bin/bash
# One device call: this tree against a base tree carried as devbase/ (`git archive BASE` of the
# library, specs, examples and benchmark scripts), on the same machine, alternating per bench.
#   PART=gpu: the gpu tests on this tree, then `derivgraph bench --device cuda` (deepseek,
#             reference) and bench_refill_phases.py --device cuda, base then mine, twice;
#   PART=host: the host-CPU benches (deepseek, reference, scaling), base then mine.
# usage on the device: source benchmarks/results/s44/refill_ab/setup.sh; OUT=$OUT PART=gpu bash benchmarks/results/s54/device_round.sh
set -u
OUT=${OUT:?}; PART=${PART:-gpu}
mkdir -p "$OUT"
here=$PWD
(cd devbase && ln -sfn ../specs derivgraph/spec_library && ln -sfn ../examples derivgraph/examples)
{ nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv
  python3 -c "import torch, sys; print('torch', torch.__version__, 'python', sys.version.split()[0])"
  nproc; date -u
  md5sum derivgraph/runtime/engine.py derivgraph/runtime/holders.py derivgraph/compiler/build.py \
    derivgraph/adoption.py vllm_integration/completion.py
  echo base; (cd devbase && md5sum derivgraph/runtime/engine.py derivgraph/runtime/holders.py \
    derivgraph/compiler/build.py derivgraph/adoption.py vllm_integration/completion.py); } > "$OUT/env.txt" 2>&1
step() {  # step NAME TIMEOUT TREE COMMAND...: run COMMAND in TREE, log, record the status
  local name=$1 limit=$2 tree=$3; shift 3
  (cd "$tree" && PYTHONPATH="$tree:$SITE" timeout "$limit" "$@") > "$OUT/$name" 2> "$OUT/$name.err"
  echo "$name rc=$?" >> "$OUT/rc.txt"
}
if [ "$PART" = gpu ]; then
  step gpu_tests.log 300 "$here" python3 -m pytest -m gpu -q -p no:cacheprovider tests/
  for i in 1 2; do for t in base mine; do
    tree=$here/devbase; [ $t = mine ] && tree=$here
    step "cuda_deepseek_${t}_$i.json" 120 "$tree" python3 -m derivgraph.cli bench --device cuda --workload deepseek --format json
    step "refill_phases_cuda_${t}_$i.json" 120 "$tree" python3 benchmarks/bench_refill_phases.py --device cuda --workload deepseek --repeat 41
  done; done
  for t in base mine; do
    tree=$here/devbase; [ $t = mine ] && tree=$here
    step "cuda_reference_${t}.json" 120 "$tree" python3 -m derivgraph.cli bench --device cuda --workload reference --format json
  done
else
  for t in base mine; do
    tree=$here/devbase; [ $t = mine ] && tree=$here
    step "hostcpu_deepseek_${t}.json" 90 "$tree" python3 -m derivgraph.cli bench --device cpu --workload deepseek --format json
    step "hostcpu_reference_${t}.json" 90 "$tree" python3 -m derivgraph.cli bench --device cpu --workload reference --format json
  done
  for t in base mine; do
    tree=$here/devbase; [ $t = mine ] && tree=$here
    step "scaling_${t}.json" 200 "$tree" python3 -m derivgraph.cli bench --workload scaling --format json
  done
fi
cat "$OUT/rc.txt"; tail -3 "$OUT/gpu_tests.log" 2>/dev/null
tar czf "/tmp/${PART}.tgz" -C "$OUT" . && rm -rf "${OUT:?}"/* && mv "/tmp/${PART}.tgz" "$OUT/"
