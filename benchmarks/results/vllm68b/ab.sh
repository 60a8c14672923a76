# base (/tmp/base68) vs this tree, bench_vllm_reload.py --clock cpu, alternating processes
# usage: bash benchmarks/results/vllm68b/ab.sh PAIRS REPEAT [FIRST [MINE_TREE OUT_DIR]]
# (from this tree's root; MINE_TREE defaults to it, OUT_DIR to benchmarks/results/vllm68b/ab)
pairs=$1; repeat=$2; first=${3:-1}; mine=${4:-$PWD}; out=${5:-$PWD/benchmarks/results/vllm68b/ab}
mkdir -p "$out"
for i in $(seq "$first" $((first + pairs - 1))); do
  if [ $((i % 2)) = 1 ]; then order="base mine"; else order="mine base"; fi
  for arm in $order; do
    if [ $arm = base ]; then tree=/tmp/base68; else tree=$mine; fi
    (cd /tmp && PATH=/work/venv/bin:$PATH PYTHONPATH=$tree python3 $tree/benchmarks/bench_vllm_reload.py \
      --clock cpu --repeat "$repeat" --json "$out/${arm}_$i.json" > "$out/${arm}_$i.log" 2>&1)
    echo "$arm $i done $(date +%T) load $(cut -d' ' -f1 /proc/loadavg)"
  done
done
