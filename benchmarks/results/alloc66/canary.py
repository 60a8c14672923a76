"""Plant each canary once (in its library file), run the tests, restore the file.

    cd TREE && PYTHONPATH=. python3 benchmarks/results/alloc66/canary.py
"""

from __future__ import annotations

import pathlib
import subprocess
import sys

PLANNER = pathlib.Path("derivgraph/planner.py")
ADOPTION = pathlib.Path("derivgraph/adoption.py")
TESTS = ["tests/compiler/test_unfilled_columns.py", "tests/compiler/test_column_allocation.py",
         "tests/compiler/test_bit_check_columns.py", "tests/compiler/test_constant_positions.py",
         "tests/compiler/test_constant_entries_by_column.py"]
RULE = "if pass_writes(graph.derived[column.template], deps):"
PROOF = "    unpaid = [fill for column in owed if not all(map(written.__contains__, column.ids))"
CANARIES: dict[str, tuple[str, str, pathlib.Path]] = {
    "the empty rule widened: every column unfilled": (RULE, "if True:", PLANNER),
    "the empty rule widened: source-free columns unfilled":
        (RULE, "if not pass_writes(graph.derived[column.template], deps) or True:", PLANNER),
    "the proof gone: no owed column filled": (PROOF, PROOF.replace("not all(", "False and all("),
                                              PLANNER),
    "the proof counts a partly written column as written": (PROOF, PROOF.replace("all(", "any("),
                                                            PLANNER),
    "positions: the generic constants not marked": ("            marks[position[node_id]] = 1",
                                                    "            pass", PLANNER),
    "positions: a column's rows marked without the slice compared":
        ("return span if ids[span] == rows else None", "return span", ADOPTION),
    "positions: an order of another length taken":
        ("    if len(ids) != len(entries) or len(at) != len(entries.generic):\n        return None",
         "    if False:\n        return None", PLANNER),
    "the rule widened and the proof gone": (
        f"    {RULE}", f"    if True:  # {RULE}", PLANNER),
}
BOTH = "the rule widened and the proof gone"


def main() -> None:
    for name, (old, new, path) in CANARIES.items():
        original = path.read_text()
        assert original.count(old) == 1, name
        try:
            planted = original.replace(old, new)
            if name == BOTH:
                planted = planted.replace(PROOF, PROOF.replace("not all(", "False and all("))
            path.write_text(planted)
            run = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                                  *TESTS], capture_output=True, text=True)
            failed = [line.split(" - ")[0].removeprefix("FAILED ")
                      for line in run.stdout.splitlines() if line.startswith("FAILED")]
            print(f"{name}: rc={run.returncode} failed={failed}", flush=True)
        finally:
            path.write_text(original)


if __name__ == "__main__":
    main()
