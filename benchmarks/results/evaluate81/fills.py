"""How often the compile's ColumnValues puts its kept columns into the dict (a per-id read
of a kept row), and who asked: ``python fills.py SIZE``."""
import sys
import traceback

from derivgraph.compiler import columns
from derivgraph.planner import compile_plan
from derivgraph.tools.bench_scaling import scaling_model, scaling_spec

real = columns.ColumnValues.fill
calls = []


def spy(self):
    if self._pending:
        calls.append("".join(traceback.format_stack(limit=6)[:-1]))
    real(self)


columns.ColumnValues.fill = spy
size = int(sys.argv[1]) if len(sys.argv) > 1 else 1000
compile_plan(scaling_model(size // 4), [scaling_spec()])
print(f"size {size}: fills with columns pending: {len(calls)}")
for c in calls:
    print(c)
