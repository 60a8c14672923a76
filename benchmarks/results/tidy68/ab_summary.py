"""Medians of ab_run.sh's outputs: per process, the refill arm's own plan-run median (us) and its
whole-reload median minus off's; per pair, whether B (this tree) was lower.

    python3 benchmarks/results/tidy68/ab_summary.py OUT
"""

import pathlib
import re
import statistics
import sys

out = pathlib.Path(sys.argv[1])
runs: dict[str, dict[int, float]] = {"A": {}, "B": {}}
delta: dict[str, dict[int, float]] = {"A": {}, "B": {}}
for f in sorted(out.glob("*.txt")):
    who, k = f.stem.split("_")
    text = f.read_text()
    run = re.search(r"the plan's run .* min/q25/med +\S+ +\S+ +(\S+)", text)
    whole = re.search(r"^refill +n +\d+ min/q25/med .* med-off +(\S+)", text, re.M)
    if run and whole:
        runs[who][int(k)] = float(run.group(1))
        delta[who][int(k)] = float(whole.group(1))
pairs = sorted(set(runs["A"]) & set(runs["B"]))
for name, table in (("plan run median us", runs), ("reload median - off us", delta)):
    a = [table["A"][k] for k in pairs]
    b = [table["B"][k] for k in pairs]
    lower = sum(y < x for x, y in zip(a, b))
    print(f"{name}: A {statistics.median(a):.1f}, B {statistics.median(b):.1f}; "
          f"B lower in {lower} of {len(pairs)} pairs; A {a} B {b}")
