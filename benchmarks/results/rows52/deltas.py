"""Per-pair build_graph deltas (mine - base, process s) of build_ab.py output files.

    python deltas.py FILE [FILE ...]
"""

import ast
import statistics
import sys

deltas = []
for path in sys.argv[1:]:
    got = {}
    for line in open(path):
        parts = line.split(" ", 2)
        if len(parts) == 3 and parts[0] in ("base", "mine") and parts[1].isdigit():
            got[(parts[0], int(parts[1]))] = ast.literal_eval(parts[2])["build_graph"]
    rounds = len(got) // 2
    deltas += [got[("mine", i)] - got[("base", i)] for i in range(rounds)]
print("deltas", [round(d, 3) for d in deltas])
print(f"median {statistics.median(deltas):+.3f}  mine faster in {sum(d < 0 for d in deltas)} "
      f"of {len(deltas)}")
