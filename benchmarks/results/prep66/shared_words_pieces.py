"""The pieces of the startup check's words taken from the table's, at 100k, ms medians (run on the
v1 library, before the listcomp mask; the pieces are the same calls). usage: PYTHONPATH=. python
benchmarks/results/prep66/shared_words_pieces.py"""
import gc, time, statistics
import numpy as np
from itertools import compress
from operator import is_
from derivgraph import planner
from derivgraph.tools.bench_scaling import scaling_model, scaling_spec
plan = planner.compile_plan(scaling_model(25000), [scaling_spec()])
tensors, table = plan.tensors, plan.holders.table
gc.disable()
def tm(f, n=15):
    r=[]
    for _ in range(n):
        a=time.perf_counter(); f(); r.append(time.perf_counter()-a)
    return round(statistics.median(r)*1e3,2)
table.at_startup_addresses(); proven=table.addresses(); w=proven.words
st=tensors.startup_addresses()
ents=table.entries
mask=bytes([e.startup_data is not None for e in ents])
keep=np.frombuffer(mask, dtype=np.bool_)
for i in range(2):
  print("list copy", tm(lambda: list(w.tensors)))
  print("compress tensors", tm(lambda: list(compress(w.tensors, mask))))
  print("compress ptrs", tm(lambda: list(compress(proven.ptrs, mask))))
  print("identity", tm(lambda: all(map(is_, compress(proven.tensors, mask), st.tensors))))
  print("ptr eq", tm(lambda: list(compress(proven.ptrs, mask)) == st.ptrs))
  impls, stores = w._expected
  print("exp", tm(lambda: (np.frombuffer(impls, dtype=np.int64).reshape(-1, 2)[keep].tobytes(), np.frombuffer(stores, dtype=np.int64)[keep].tobytes())))
  print("mask", tm(lambda: bytes([e.startup_data is not None for e in ents])))
  print("kept.intact", tm(lambda: st.words.kept() if st.words else None))
