"""Plant each canary once (in its library file), run the tests, restore the file.

    cd TREE && PYTHONPATH=. python3 benchmarks/results/glue63/canary.py
"""

from __future__ import annotations

import pathlib
import subprocess
import sys

PLANNER = pathlib.Path("derivgraph/planner.py")
COLUMNS = pathlib.Path("derivgraph/runtime/entry_columns.py")
TESTS = ["tests/compiler/test_entries_outside_columns.py",
         "tests/compiler/test_bit_check_columns.py",
         "tests/compiler/test_column_owner_proof.py"]
CANARIES: dict[str, tuple[str, str] | tuple[str, str, pathlib.Path]] = {
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
    "paths: adoption's paths rotated": ("return list(self.paths)",
                                        "return self.paths[1:] + self.paths[:1]", COLUMNS),
    "paths: adoption's list handed out (no copy)": ("return list(self.paths)",
                                                    "return self.paths", COLUMNS),
    "paths: no row count check": ("if self.paths is not None and len(self.paths) == "
                                  "len(self.entries):", "if self.paths is not None:", COLUMNS),
}


def main() -> None:
    for name, (old, new, *where) in CANARIES.items():
        path = where[0] if where else PLANNER
        original = path.read_text()
        assert original.count(old) == 1, name
        try:
            path.write_text(original.replace(old, new))
            run = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                                  *TESTS], capture_output=True, text=True)
            failed = [line.split(" - ")[0].removeprefix("FAILED ")
                      for line in run.stdout.splitlines() if line.startswith("FAILED")]
            print(f"{name}: rc={run.returncode} failed={failed}", flush=True)
        finally:
            path.write_text(original)


if __name__ == "__main__":
    main()
