"""Where the entries of held column rows (:class:`~derivgraph.runtime.entry.RowEntry`) are
made and who reads or writes their fields, per phase, over one compile of the scaling model,
``plan.prepare``, ``plan.run()``, ``plan.refill()`` and a second run: each field of a row
entry is answered through a counting property (reads and writes, by the calling function's
file, line and name; a C-level sweep ``map(attrgetter(...), entries)`` is counted at the line
that runs it). This is the census step 2 (entries made on first access) must move.
usage: PYTHONPATH=. python3 benchmarks/results/entry73/entry_readers.py [LAYERS]
"""

from __future__ import annotations

import sys
from collections import Counter
from typing import Any

from derivgraph import planner
from derivgraph.runtime import entry as entry_module
from derivgraph.runtime.entry import Entry, RowEntry
from derivgraph.tools.bench_scaling import scaling_model, scaling_spec

counts: Counter[tuple[str, str, str, int, str, str]] = Counter()
made: Counter[tuple[str, str, int, str]] = Counter()
phase = ["compile_plan"]


def _where(depth: int) -> tuple[str, int, str]:
    """The calling function's file, line and name (``depth`` frames up); a helper of
    ``runtime/entry.py`` or a comprehension is named with its own caller's."""
    frame = sys._getframe(depth)
    code = frame.f_code
    file, line, name = code.co_filename.split("derivgraph/")[-1], frame.f_lineno, code.co_name
    if (file == "runtime/entry.py" or name.startswith("<")) and frame.f_back is not None:
        up = frame.f_back
        name += f" <- {up.f_code.co_name} ({up.f_code.co_filename.split('derivgraph/')[-1]}" \
                f":{up.f_lineno})"
    return file, line, name


def _counting(name: str, member: Any) -> property:
    def get(self: Entry) -> Any:
        counts[(phase[0], "read", *_where(2), name)] += 1
        return member.__get__(self, type(self))

    def put(self: Entry, value: Any) -> None:
        if type(self) is RowEntry:
            counts[(phase[0], "write", *_where(2), name)] += 1
        member.__set__(self, value)

    return property(get, put)


def main() -> None:
    layers = int(sys.argv[1]) if len(sys.argv) > 1 else 1000
    for name in Entry.__slots__:
        if name != "node":  # node reads: entry72/node_readers.py
            setattr(RowEntry, name, _counting(name, Entry.__dict__[name]))
    row_entries = entry_module.row_entries

    def counted_rows(column: Any, storages: Any, slot: Any) -> list[Entry]:
        out = row_entries(column, storages, slot)
        made[(phase[0], *_where(2))] += len(out)
        return out

    import derivgraph.adoption_columns as adoption_columns
    adoption_columns.row_entries = counted_rows  # type: ignore[attr-defined]
    plan = planner.compile_plan(scaling_model(layers), [scaling_spec()])
    for name, step in (("prepare", plan.prepare), ("run", plan.run), ("refill", plan.refill),
                       ("run2", plan.run)):
        phase[0] = name
        step()
    rows = sum(type(e) is RowEntry for e in plan.entries.by_id.values())
    print(f"{layers} layers, {len(plan.entries)} entries, {rows} row entries")
    print("made (phase, file, line, function): rows")
    for key, n in sorted(made.items()):
        print(" ", n, *key)
    print("field accesses of row entries (phase, read/write, file, line, function, field): count")
    for key, n in sorted(counts.items()):
        print(" ", n, *key)


if __name__ == "__main__":
    main()
