"""Plant each canary once (in its library file), run the tests, restore the file.

    cd TREE && PYTHONPATH=. python3 benchmarks/results/adopt64/canary.py
"""

from __future__ import annotations

import pathlib
import subprocess
import sys

ADOPTION = pathlib.Path("derivgraph/adoption.py")
ROWS = pathlib.Path("derivgraph/adoption_columns.py")
COLUMNS = pathlib.Path("derivgraph/runtime/entry_columns.py")
TESTS = ["tests/compiler/test_adoption_placement.py",
         "tests/compiler/test_planned_by_id.py",
         "tests/compiler/test_adoption_reading.py",
         "tests/compiler/test_non_persistent_names.py",
         "tests/compiler/test_adoption_columns.py",
         "tests/compiler/test_module_owners.py"]
CANARIES: dict[str, tuple[str, str, pathlib.Path]] = {
    "placed: the columns put in the reverse order": ("    for column in taken:\n        rows",
                                                     "    for column in taken[::-1]:\n        rows",
                                                     ADOPTION),
    "placed: the slice not compared with the column's ids":
        ("return span if ids[span] == rows else None", "return span", ADOPTION),
    "placed: the step taken as 1": ("step = ids.index(rows[1], start + 1) - start",
                                    "step = 1", ADOPTION),
    "by id: a key not kept aside answered as a miss":
        ("return self._dict().get(key, default) if key in self._derived else default",
         "return default", ADOPTION),
    "by id: a derived key answered from the few rows only":
        ("found = self._few.get(key, _ABSENT)\n        if found is not _ABSENT:\n"
         "            return found\n",
         "found = self._few.get(key, _ABSENT)\n        if found is not _ABSENT or True:\n"
         "            return default if found is _ABSENT else found\n", ADOPTION),
    "reading: the last owners taken for other paths":
        ("if self.paths is not None and self.paths == paths:", "if self.paths is not None:",
         ROWS),
    "reading: the last owners handed out (no copy)": ("return list(self.found)",
                                                      "return self.found", ROWS),
    "non-persistent: the last sweep taken for other owners":
        ("if swept and len(swept) == len(owners) and all(map(_is, owners, swept)):",
         "if swept:", COLUMNS),
    "non-persistent: owners holding names kept as swept":
        ("    if not any(map(_NON_PERSISTENT, owners)):\n        if swept is not None:\n"
         "            swept[:] = owners\n        return False\n",
         "    if swept is not None:\n        swept[:] = owners\n"
         "    if not any(map(_NON_PERSISTENT, owners)):\n        return False\n", COLUMNS),
}


def main() -> None:
    for name, (old, new, path) in CANARIES.items():
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
