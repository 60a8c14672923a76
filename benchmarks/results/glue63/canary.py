"""Plant each canary in derivgraph/planner.py once, run its tests, restore the file.

    cd TREE && PYTHONPATH=. python3 benchmarks/results/glue63/canary.py
"""

from __future__ import annotations

import pathlib
import subprocess
import sys

PLANNER = pathlib.Path("derivgraph/planner.py")
TESTS = ["tests/compiler/test_entries_outside_columns.py",
         "tests/compiler/test_bit_check_columns.py"]
CANARIES = {
    "outside: no row count check (a taken column dropped)":
        ("== sum(taken.values()) == len(ids) - len(outside)",
         "or True"),
    "outside: no distinct-columns check":
        ("if len(mine) == len(columns) and mine.issubset(taken)",
         "if mine.issubset(taken)"),
    "joined: no address check":
        ("if list(map(_ADDRESS, tensors)) != list(range(start, start + n * step, step)) \\\n"
         "            or not",
         "if not"),
    "joined: no element count check": ("base.numel() != n * numel", "False"),
    "joined: contiguity always taken as proven": ("not (row_major or all(", "not (True or all("),
}


def main() -> None:
    original = PLANNER.read_text()
    try:
        for name, (old, new) in CANARIES.items():
            assert original.count(old) == 1, name
            PLANNER.write_text(original.replace(old, new))
            run = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                                  *TESTS], capture_output=True, text=True)
            failed = [line.split(" ")[1] for line in run.stdout.splitlines()
                      if line.startswith("FAILED")]
            print(f"{name}: rc={run.returncode} failed={failed}", flush=True)
    finally:
        PLANNER.write_text(original)


if __name__ == "__main__":
    main()
