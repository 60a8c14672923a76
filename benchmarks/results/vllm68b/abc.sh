# three trees in rotation (base68, vllm68's head 75000a23, this branch's head; each a git archive
# under /tmp), bench_vllm_reload.py --clock cpu: is a whole-reload difference this branch's?
# usage: bash benchmarks/results/vllm68b/abc.sh ROUNDS REPEAT   (from this tree's root)
rounds=$1; repeat=$2; out=$PWD/benchmarks/results/vllm68b/abc; mkdir -p "$out"
for i in $(seq 1 "$rounds"); do
  case $((i % 3)) in 1) order="base ref head";; 2) order="ref head base";; 0) order="head base ref";; esac
  for arm in $order; do
    case $arm in base) tree=/tmp/base68;; ref) tree=/tmp/vllm68b_ref;; head) tree=/tmp/vllm68b_head;; esac
    (cd /tmp && PATH=/work/venv/bin:$PATH PYTHONPATH=$tree python3 $tree/benchmarks/bench_vllm_reload.py \
      --clock cpu --repeat "$repeat" --json "$out/${arm}_$i.json" > "$out/${arm}_$i.log" 2>&1)
    echo "$arm $i done $(date +%T) load $(cut -d' ' -f1 /proc/loadavg)"
  done
done
