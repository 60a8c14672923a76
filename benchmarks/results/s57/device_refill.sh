#!/bin/bash
# One device call for 20.2 (refill host time on the H200): the gpu tests, then N rounds of
# `derivgraph bench --device cuda --workload deepseek` and bench_refill_phases.py --device cuda,
# all on this tree (no base: the goal is absolute, <= 1 ms refill host, post-load + refill <= 1.1x).
# EXTRA=1 (device_final.sh) adds the refill-free diagnostic (20.2), the cuda reference bench and
# the host-CPU benches (20.3 deepseek and reference, 20.4 scaling), and names the archive final.tgz.
# usage on the device: source benchmarks/results/s44/refill_ab/setup.sh; OUT=$OUT N=4 bash benchmarks/results/s57/device_refill.sh
set -u
OUT=${OUT:?}; N=${N:-4}; EXTRA=${EXTRA:-0}
mkdir -p "$OUT"
{ nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv
  python3 -c "import torch, sys; print('torch', torch.__version__, 'python', sys.version.split()[0])"
  nproc; date -u; git rev-parse HEAD 2>/dev/null
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
name=refill
if [ "$EXTRA" = 1 ]; then
  name=final
  step refill_free_cuda.json 120 python3 benchmarks/results/s57/refill_free.py --device cuda --repeat 41
  step cuda_reference.json 120 python3 -m derivgraph.cli bench --device cuda --workload reference --format json
  step hostcpu_deepseek.json 90 python3 -m derivgraph.cli bench --device cpu --workload deepseek --format json
  step hostcpu_reference.json 90 python3 -m derivgraph.cli bench --device cpu --workload reference --format json
  step scaling.json 200 python3 -m derivgraph.cli bench --workload scaling --format json
fi
cat "$OUT/rc.txt"; tail -3 "$OUT/gpu_tests.log" 2>/dev/null
tar czf "/tmp/$name.tgz" -C "$OUT" . && rm -rf "${OUT:?}"/* && mv "/tmp/$name.tgz" "$OUT/"
