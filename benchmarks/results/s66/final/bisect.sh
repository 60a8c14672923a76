here=/work/main/benchmarks/results/compile36
for i in 1 2; do
for t in /tmp/base66 /tmp/bis_30d79ab3 /tmp/bis_de74b115 /tmp/bis_5aa33121 /tmp/bis_dd7ffc9a /tmp/bis_0cea93c1 /tmp/s66final; do
  (cd "$t/benchmarks" && PYTHONPATH="$t" python3 "$here/stamped_phases.py" --size 100000 --repeat 1 --tag "$(basename $t)")
done; done
