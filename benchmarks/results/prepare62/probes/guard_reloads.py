"""Deepseek on CPU (bench_refill_phases' workload): over 10 reloads, how many times the refill's
layout check swept and built its guard, and whether the guard alone proved each read. Run with
the tree under test first on the path: PYTHONPATH=TREE python3 guard_reloads.py"""

from __future__ import annotations

import sys
from typing import Any

sys.path.insert(0, __file__.rsplit("/benchmarks/", 1)[0] + "/benchmarks")
from bench_refill_phases import _workload  # noqa: E402

from derivgraph.planner import compile_plan  # noqa: E402
from derivgraph.runtime import engine  # noqa: E402

calls = {"swept": 0, "guard": 0, "passed": 0}
swept, guard = engine.Layouts.swept, engine.Layouts.guard


def spy_swept(self: Any, theirs: list[Any]) -> bool:
    calls["swept"] += 1
    return swept(self, theirs)


def spy_guard(self: Any, theirs: list[Any]) -> None:
    calls["guard"] += 1
    guard(self, theirs)


engine.Layouts.swept, engine.Layouts.guard = spy_swept, spy_guard
model, specs, reload, post_load, _ = _workload("cpu", "deepseek", 61, None)
plan = compile_plan(model, specs)
print("after compile", calls, "guard built:", plan._refill_table._layouts._guard is not None)
for i in range(10):
    reload(i)
    post_load()
    layouts = plan._refill_table._layouts
    current = plan.holders.table.current()
    picked = current if plan._refill_table._pick is None else plan._refill_table._pick(current)
    if layouts._guard is not None and layouts._guard.check(*picked):
        calls["passed"] += 1
    plan.refill(verify=True)
print("after 10 reloads", calls, "guards built:", plan._refill_table._layouts._guards)
