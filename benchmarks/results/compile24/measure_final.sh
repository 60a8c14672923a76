set -e
BASE=/tmp/base_compile24; BRANCH=/work/wt/compile24; OUT=$BRANCH/benchmarks/results/compile24
for round in 3 4; do for tree in base branch; do
  dir=$BASE; [ $tree = branch ] && dir=$BRANCH
  echo "$(date -u +%H:%M:%S) $tree round $round load $(cut -d' ' -f1-3 /proc/loadavg)" >> "$OUT/load.log"
  (cd "$dir" && PYTHONPATH=$dir python3 benchmarks/bench_compile_phases.py --size 100000 --repeat 1 --json "$OUT/phases_100k_${tree}_${round}.json" > /dev/null)
done; done
