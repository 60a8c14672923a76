"""Per-pair deltas (branch - base) of the cold CLI pairs and the in-process profile pairs:
python3 benchmarks/results/scan34/summarize.py"""
import re
import statistics
from pathlib import Path

here = Path(__file__).parent


def show(label, base, new):
    d = [b - a for a, b in zip(base, new)]
    print(f"{label}: base median {statistics.median(base):.2f}, branch median "
          f"{statistics.median(new):.2f}; per pair " + " ".join(f"{x:+.2f}" for x in d)
          + f"; median {statistics.median(d):+.2f} (range {min(d):+.2f} .. {max(d):+.2f})")


for name in ("pairs.txt", "pairs2.txt", "pairs3.txt", "pairs4.txt"):
    rows = re.findall(r"^(base|merged) pair=\d+ load=([\d.]+) wall_user_sys=([\d.]+) ([\d.]+) "
                      r"([\d.]+)", (here / name).read_text(), re.M)
    loads = [float(r[1]) for r in rows]
    print(f"== cold CLI {name} (load {min(loads):.2f}-{max(loads):.2f})")
    for label, pick in (("wall", lambda r: float(r[2])),
                        ("user+sys", lambda r: float(r[3]) + float(r[4]))):
        show(label, [pick(r) for r in rows if r[0] == "base"],
             [pick(r) for r in rows if r[0] == "merged"])
text = (here / "profile_pairs.txt").read_text()
runs = re.split(r"^== ", text, flags=re.M)[1:]
data = {"base": [], "branch": []}
for run in runs:
    tree = run.split()[0]
    wall = float(re.search(r"scan wall ([\d.]+)", run).group(1))
    selfu = float(re.search(r"self user ([\d.]+)", run).group(1))
    child = float(re.search(r"children user ([\d.]+)", run).group(1))
    ev = re.search(r"apply_evidence \[\(([\d.]+), ([\d.]+), ([\d.]+)\)\]", run)
    data[tree].append((wall, selfu + child, float(ev.group(1)), float(ev.group(3))))
loads = [float(x) for x in re.findall(r"load=([\d.]+)", text)]
print(f"== in-process profile (scan31_phases.py; load {min(loads):.2f}-{max(loads):.2f})")
for k, label in enumerate(("scan wall", "scan user CPU (self + children)", "evidence wall",
                           "evidence children CPU")):
    show(label, [r[k] for r in data["base"]], [r[k] for r in data["branch"]])
