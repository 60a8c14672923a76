# refill A/B on the H200: rounds of d5136d4 / 389110a / r44 while under 380 s, then toggled.py
start=$SECONDS; i=0
while [ $((SECONDS - start)) -lt 380 ]; do
  i=$((i+1)); bash benchmarks/results/s43/device_refill_ab.sh 1 d5136d4 389110a r44
  echo "round $i done at $((SECONDS - start)) s"
done
(cd .t_r44 && PYTHONPATH=$PWD:/tmp/site timeout 150 python3 benchmarks/results/refill43/toggled.py --device cuda --clock wall --repeat 201 --json "$OUT/toggled_cuda.json" > "$OUT/toggled_cuda.txt" 2>&1)
tail -30 "$OUT/toggled_cuda.txt"; cat "$OUT/err.txt" | tail -5
