"""In-process A/B of EntryColumn.record_startup, the base tree's (loaded from /tmp/base_back46)
vs this tree's (which also records the storage addresses in the book), over the allocated
columns of one stamped 100k scaling compile, alternating 11 rounds; process seconds, medians,
and in how many rounds this tree was faster.

    PYTHONPATH=. python3 benchmarks/results/back46/micro_record_startup.py
"""
import gc, time, statistics, importlib.util, sys
from derivgraph import planner
from derivgraph.compiler.stamp import stamping
from derivgraph.tools.bench_scaling import scaling_model, scaling_spec
from derivgraph.runtime import entry_columns as ec
spec = importlib.util.spec_from_file_location("base_ec", "/tmp/base_back46/derivgraph/runtime/entry_columns.py")
base_ec = importlib.util.module_from_spec(spec); sys.modules["base_ec"] = base_ec; spec.loader.exec_module(base_ec)
books, made = [], []
class Kept(planner.ColumnLayouts):
    __slots__ = ()
    def __init__(self):
        super().__init__(); books.append(self)
planner.ColumnLayouts = Kept
_ec = planner.entry_columns
def keep(*a, **k):
    out = _ec(*a, **k); made.extend(out); return out
planner.entry_columns = keep
gc.disable()
with stamping(True):
    plan = planner.compile_plan(scaling_model(25000), [scaling_spec()])
book = books[-1]
cols = [c for c in made if type(c) is ec.EntryColumn]
def mine():
    for c in cols: c.record_startup(book)
def base():
    for c in cols: base_ec.EntryColumn.record_startup(c)
tb, tm = [], []
for _ in range(11):
    s = time.process_time(); base(); tb.append(time.process_time() - s)
    s = time.process_time(); mine(); tm.append(time.process_time() - s)
print("base", round(statistics.median(tb), 4), "mine", round(statistics.median(tm), 4), sum(m < b for m, b in zip(tm, tb)))
