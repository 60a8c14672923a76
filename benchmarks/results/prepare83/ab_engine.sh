# usage: ab_engine.sh ROUNDS BASE MINE  (min ms per tree per round, interleaved)
for r in $(seq $1); do for t in $2 $3; do
  echo "$t $(cd $t && PYTHONPATH=$t /work/venv/bin/python3 /work/wt/prepare83/benchmarks/results/prepare83/ab_engine.py 3) load $(cut -d' ' -f1 /proc/loadavg)"
done; done
