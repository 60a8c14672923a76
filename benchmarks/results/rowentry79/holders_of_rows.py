"""Which objects the plan keeps that refer to a held column row's entry
(:class:`~derivgraph.runtime.entry.RowEntry`) after ``compile_plan`` and after ``prepare``,
``run``, ``refill``, ``run``: the structures an id -> (column, row) book must replace before
no row entry is kept. Each referrer is named by its type and, where it is an attribute
value of a plan part, by ``Owner.attribute``.
usage: PYTHONPATH=. python3 benchmarks/results/rowentry79/holders_of_rows.py [LAYERS]
"""

from __future__ import annotations

import gc
import sys
from collections import Counter
from typing import Any

from derivgraph import planner
from derivgraph.runtime import entry as entry_module
from derivgraph.runtime.entry import RowEntry
from derivgraph.tools.bench_scaling import scaling_model, scaling_spec

made: Counter[tuple[str, str]] = Counter()
phase = ["compile_plan"]
_make = entry_module.HeldRows._make


def _counted_make(self: Any, column: Any, row: int) -> Any:
    """HeldRows._make, counted by phase and the reader that asked (two frames up)."""
    frame = sys._getframe(2)
    made[(phase[0], f"{frame.f_code.co_filename.split('derivgraph/')[-1]}:{frame.f_lineno} "
                    f"{frame.f_code.co_name}")] += 1
    return _make(self, column, row)


entry_module.HeldRows._make = _counted_make  # type: ignore[method-assign]


def _named(plan: Any) -> dict[int, str]:
    """id -> 'Owner.attr' for every attribute value one or two hops from the plan."""
    out: dict[int, str] = {}
    seen: set[int] = set()
    todo = [("Plan", plan, 0)]
    while todo:
        name, obj, depth = todo.pop()
        if id(obj) in seen or depth > 3:
            continue
        seen.add(id(obj))
        attrs: dict[str, Any] = {}
        if hasattr(obj, "__dict__"):
            attrs.update(vars(obj))
        for slot in getattr(type(obj), "__slots__", ()):
            if hasattr(obj, slot):
                attrs[slot] = getattr(obj, slot)
        for key, value in attrs.items():
            if isinstance(value, (int, float, str, bytes, type(None))):
                continue
            label = f"{type(obj).__name__}.{key}"
            out.setdefault(id(value), label)
            if isinstance(value, (list, tuple)) and value and not isinstance(value[0], (int, str)):
                for item in value[:8]:
                    out.setdefault(id(item), f"{label}[i]")
                    todo.append((f"{label}[i]", item, depth + 1))
            todo.append((label, value, depth + 1))
    return out


def census(plan: Any, phase: str) -> None:
    gc.collect()
    rows = [e for e in gc.get_objects() if type(e) is RowEntry]  # alive, not asked for
    names = _named(plan)
    kinds: Counter[str] = Counter()
    sample = rows[:: max(1, len(rows) // 50)]
    for entry in sample:
        for ref in gc.get_referrers(entry):
            if ref is rows or ref is sample or type(ref).__name__ == "frame":
                continue
            size = len(ref) if hasattr(ref, "__len__") else "-"
            kinds[f"{type(ref).__name__} {names.get(id(ref), '?')} (len {size})"] += 1
    print(f"{phase}: {len(plan.entries)} entries, {len(rows)} row entries alive; "
          f"referrers of a sample of {len(sample)}:")
    for key, n in kinds.most_common():
        print(f"  {n:4d} {key}")


def main() -> None:
    layers = int(sys.argv[1]) if len(sys.argv) > 1 else 1000
    plan = planner.compile_plan(scaling_model(layers), [scaling_spec()])
    census(plan, "compile_plan")
    for name, step in (("run", plan.run), ("refill", plan.refill), ("run2", plan.run)):
        phase[0] = name
        step()
    census(plan, "after run, refill, run")
    print("row entries made on ask (phase, reader): count")
    for key, n in sorted(made.items()):
        print(f"  {n:6d} {key[0]} {key[1]}")


if __name__ == "__main__":
    main()
