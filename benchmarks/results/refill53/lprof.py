"""line_profiler of ``RefillTable.__init__`` on one stamped 100k plan (the compile's book).

    PYTHONPATH=TREE /work/venv/bin/python benchmarks/results/refill53/lprof.py
"""

import sys
from pathlib import Path

try:
    from line_profiler import LineProfiler
except ImportError as exc:  # the profile extra: pip install -e '.[profile]'
    raise SystemExit("this script needs line-profiler: pip install -e '.[profile]'") from exc

from derivgraph.runtime import engine

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from stamped_plan import held_plan  # noqa: E402

plan, _, seen = held_plan(100000)
plan.tensors.layouts = seen["book"]
lp = LineProfiler(engine.RefillTable.__init__, engine._by_key, engine.Layouts.__init__)
for _ in range(3):
    plan._refill_table = None
    lp.runcall(plan._refill_table_now)
lp.print_stats()
