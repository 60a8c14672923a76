#!/usr/bin/env bash
# One GPU round for BENCHMARKS.md's H200 tables, in one call on the device machine:
#   OUT=/some/dir bash benchmarks/gpu_round.sh
# Writes under $OUT: gpu_tests.log (every `gpu` test), bench_{deepseek,reference}_cuda.json
# (`derivgraph bench --device cuda`), bench_{deepseek,reference}_hostcpu.json (the same on the
# host's CPU), scaling_hostcpu.json (compile at scale), env.txt, and rc.txt (each step's status).
# PART=gpu runs the gpu tests and the CUDA benches, PART=host the host-CPU benches and scaling
# (each fits one 10-minute device call); unset runs both.
set -u
OUT="${OUT:-benchmarks/results/gpu_round}"
mkdir -p "$OUT"
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"
step() {  # step NAME TIMEOUT_S COMMAND...: run, log stdout/stderr, record the exit status
    local name="$1" limit="$2"; shift 2
    timeout "$limit" "$@" > "$OUT/$name" 2> "$OUT/$name.err"
    echo "$name rc=$?" >> "$OUT/rc.txt"
}
{ nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv
  python3 -c "import torch, sys; print('torch', torch.__version__, 'python', sys.version.split()[0])"
  nproc; date -u; } > "$OUT/env.txt" 2>&1
PART="${PART:-all}"
if [ "$PART" != host ]; then
step gpu_tests.log 240 python3 -m pytest -m gpu -v tests/
step bench_deepseek_cuda.json 120 python3 -m derivgraph.cli bench --device cuda --workload deepseek --format json
step bench_reference_cuda.json 120 python3 -m derivgraph.cli bench --device cuda --workload reference --format json
fi
if [ "$PART" != gpu ]; then
step bench_deepseek_hostcpu.json 90 python3 -m derivgraph.cli bench --device cpu --workload deepseek --format json
step bench_reference_hostcpu.json 90 python3 -m derivgraph.cli bench --device cpu --workload reference --format json
step scaling_hostcpu.json 150 python3 -m derivgraph.cli bench --workload scaling --format json
fi
cat "$OUT/rc.txt"
