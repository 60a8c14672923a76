#!/bin/bash
# The session's one device call on the final tree (no base: the goals are absolute):
# the gpu tests; N rounds of `derivgraph bench --device cuda --workload deepseek` and
# bench_refill_phases.py --device cuda (20.1, 20.2); the refill-free diagnostic (20.2);
# the host-CPU benches (20.3 deepseek and reference, 20.4 scaling).
# usage on the device: source benchmarks/results/s44/refill_ab/setup.sh; OUT=$OUT N=3 bash benchmarks/results/s57/device_final.sh
set -u
OUT=${OUT:?}; N=${N:-3}
mkdir -p "$OUT"
{ nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv
  python3 -c "import torch, sys; print('torch', torch.__version__, 'python', sys.version.split()[0])"
  nproc; date -u
  md5sum derivgraph/runtime/engine.py derivgraph/runtime/holders.py derivgraph/compiler/build.py; } > "$OUT/env.txt" 2>&1
step() {  # step NAME TIMEOUT COMMAND...: run COMMAND, log, record the status
  local name=$1 limit=$2; shift 2
  timeout "$limit" "$@" > "$OUT/$name" 2> "$OUT/$name.err"
  echo "$name rc=$?" >> "$OUT/rc.txt"
}
step gpu_tests.log 300 python3 -m pytest -m gpu -q -p no:cacheprovider tests/
for i in $(seq 1 "$N"); do
  step "cuda_deepseek_$i.json" 120 python3 -m derivgraph.cli bench --device cuda --workload deepseek --format json
  step "refill_phases_cuda_$i.json" 120 python3 benchmarks/bench_refill_phases.py --device cuda --workload deepseek --repeat 41
done
step refill_free_cuda.json 120 python3 benchmarks/results/s57/refill_free.py --device cuda --repeat 41
step cuda_reference.json 120 python3 -m derivgraph.cli bench --device cuda --workload reference --format json
step hostcpu_deepseek.json 90 python3 -m derivgraph.cli bench --device cpu --workload deepseek --format json
step hostcpu_reference.json 90 python3 -m derivgraph.cli bench --device cpu --workload reference --format json
step scaling.json 200 python3 -m derivgraph.cli bench --workload scaling --format json
cat "$OUT/rc.txt"; tail -3 "$OUT/gpu_tests.log" 2>/dev/null
tar czf /tmp/final.tgz -C "$OUT" . && rm -rf "${OUT:?}"/* && mv /tmp/final.tgz "$OUT/"
