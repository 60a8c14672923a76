#!/bin/bash
# Why the compile's bit check and evaluate run 3-5x slower on the device host's CPU than here:
# a cProfile of one warm 100k compile, the phases with torch's default threads and with one
# thread, and torch.cat of 25k small tensors by thread count.
# usage on the device: source benchmarks/results/s44/refill_ab/setup.sh; OUT=$OUT bash benchmarks/results/s83/device_diag.sh
set -u
here=$(dirname "$0")
nproc > "$OUT/env.txt"; python3 -c "import torch; print(torch.__version__, torch.get_num_threads())" >> "$OUT/env.txt"
python3 "$here/cat_threads.py" > "$OUT/cat_threads.txt" 2>&1
python3 "$here/../s81/cprof.py" 100000 70 > "$OUT/cprof.txt" 2>&1
python3 benchmarks/bench_compile_phases.py --size 100000 --repeat 3 > "$OUT/phases_default.txt" 2>&1
OMP_NUM_THREADS=1 python3 benchmarks/bench_compile_phases.py --size 100000 --repeat 3 > "$OUT/phases_omp1.txt" 2>&1
python3 benchmarks/bench_compile_phases.py --size 100000 --repeat 3 > "$OUT/phases_default2.txt" 2>&1
tail -n 30 "$OUT"/phases_*.txt "$OUT/cat_threads.txt"
