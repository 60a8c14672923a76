"""min / median us per phase of the ``bench_refill_phases.py`` JSON files in a folder, in
alternation order (base 1, mine 1, base 2, ...).

    python3 benchmarks/results/refill60/phases_table.py benchmarks/results/refill60/phases
"""

import glob
import json
import sys

KEYS = ["refill", "restore", "sources", "owners", "read", "check", "copy", "rebind", "post_load"]


def main() -> None:
    files = sorted(glob.glob(sys.argv[1] + "/phases_*.json"),
                   key=lambda p: (p.rsplit("_", 1)[-1], p))
    print("file".ljust(22) + "".join(k.rjust(16) for k in KEYS))
    for path in files:
        with open(path) as f:
            d = json.load(f)
        low, mid = d["min_us"], d["median_us"]
        print(path.rsplit("/", 1)[-1].ljust(22)
              + "".join(f"{low[k]:.0f}/{mid[k]:.0f}".rjust(16) for k in KEYS))
    print("(min/median us, --clock cpu, 41 rounds each)")


if __name__ == "__main__":
    main()
