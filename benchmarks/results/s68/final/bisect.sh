# round-robin of the base, each merge and the final tree (stamped 100k compile, one process each)
here=/work/main/benchmarks/results/compile36
for i in 1 2 3; do
for t in /tmp/base68 /tmp/bis_3e477c50 /tmp/bis_2722117b /tmp/s68final; do
  (cd "$t/benchmarks" && PYTHONPATH="$t" python3 "$here/stamped_phases.py" --size 100000 --repeat 1 --tag "$(basename $t)")
done; done
