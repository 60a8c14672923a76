import json, subprocess, statistics, sys, os
trees = {"base": "/tmp/base82", "mine": "/work/wt/evaluate82"}
res = {k: [] for k in trees}
for r in range(int(sys.argv[1])):
    for name in (["base", "mine"] if r % 2 == 0 else ["mine", "base"]):
        out = subprocess.run(["/work/venv/bin/python3", "/tmp/ev82/one.py"], env={**os.environ, "PYTHONPATH": trees[name]},
                             capture_output=True, text=True, cwd="/tmp").stdout.strip().splitlines()[-1]
        d = json.loads(out); res[name].append(d); print(r, name, d, os.getloadavg()[0], flush=True)
for name, rows in res.items():
    for key in ("compile_cpu", "gc0", "words_s", "words_calls"):
        v = [x[key] for x in rows]
        print(name, key, "median", round(statistics.median(v), 4), "min", round(min(v), 4))
