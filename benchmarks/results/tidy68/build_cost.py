import time, statistics
from derivgraph.runtime import steady
from tests.runtime.test_steady_refill import Twins, _engine

t = Twins(); t.steady()
model, plan, _ = t.fast
mask = plan._last_take[1]
assert steady.build(plan, mask) is not None
def tm(f, n=2000):
    xs = []
    for _ in range(7):
        s = time.perf_counter()
        for _ in range(n): f()
        xs.append((time.perf_counter() - s) / n * 1e6)
    return statistics.median(xs)
print("build accepted us", tm(lambda: steady.build(plan, mask), 300))
plan._captured = True
print("build refused at first gate us", tm(lambda: steady.build(plan, mask)))
plan._captured = False
stale = [i for i, m in zip(plan._refill_table.index, mask) if m]
plan.holders.table.fast[stale[0]] = False
print("build refused at table.fast us", tm(lambda: steady.build(plan, mask)))
plan.holders.table.fast[stale[0]] = True
steady.ENABLED = False
def slow():
    _engine(model, 3); plan.refill()
print("slow refill us", tm(slow, 100))
