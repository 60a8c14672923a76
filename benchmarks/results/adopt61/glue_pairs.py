"""Per-pair figures of a pairs.sh file with the compile's unnamed glue: ``glue`` is
``total_cpu`` less every top-level phase ``stamped_phases.py`` names (nested ones, indented,
are inside their parents), and ``task`` is evaluate + adopt_or_allocate + record_startup +
entry_columns + glue (the task's goal: <= 0.45 s). Prints (base, mine) per pair, the medians
and how often mine is lower.

    python3 benchmarks/results/adopt61/glue_pairs.py benchmarks/results/adopt61/pairs.jsonl
"""

from __future__ import annotations

import json
import statistics
import sys

SKIP = {"tag", "total_cpu", "wall", "load1"}
SHOWN = ("total_cpu", "glue", "task", "evaluate", "adopt_or_allocate", "record_startup",
         "entry_columns", "lower (all)", "prepare (all)", "build_graph")


def _derived(row: dict[str, float]) -> dict[str, float]:
    top = sum(v for k, v in row.items() if k not in SKIP and not k.startswith(" "))
    glue = row["total_cpu"] - top
    task = row["evaluate"] + row["adopt_or_allocate"] + row["record_startup"] \
        + row["entry_columns"] + glue
    return {**row, "glue": glue, "task": task}


def main() -> None:
    rows = [_derived(json.loads(line)) for line in open(sys.argv[1]) if line.startswith("{")]
    pairs = list(zip(rows[0::2], rows[1::2]))
    assert all(b["tag"] == "base" and m["tag"] == "mine" for b, m in pairs)
    for phase in SHOWN:
        got = [(b[phase], m[phase]) for b, m in pairs]
        lower = sum(m < b for b, m in got)
        print(f"{phase:18s} base {statistics.median(b for b, _ in got):.3f}  mine "
              f"{statistics.median(m for _, m in got):.3f}  mine lower {lower} of {len(got)}  "
              + " ".join(f"({b:.3f}, {m:.3f})" for b, m in got))


if __name__ == "__main__":
    main()
