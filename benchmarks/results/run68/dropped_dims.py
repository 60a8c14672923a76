import time, statistics as st, os
from itertools import chain, repeat
from derivgraph import planner
from derivgraph.tools.bench_scaling import scaling_model, scaling_spec
spec=scaling_spec(); plan=planner.compile_plan(scaling_model(25000),[spec])
rt=plan._refill_table; shapes=rt.shapes
runs=[(a,b) for a,b in rt.spans]
print(len(runs))
def old(): return list(map(len, shapes))
def new(): return list(chain.from_iterable(repeat(len(shapes[a]), b-a) for a,b in runs))
print(old()==new())
A=[];B=[];w=0;M=31
for i in range(M):
    t=time.perf_counter(); old(); x=time.perf_counter()-t
    t=time.perf_counter(); new(); y=time.perf_counter()-t
    A.append(x);B.append(y);w+=y<x
print(f'dims: {st.median(A)*1e3:.2f} vs {st.median(B)*1e3:.2f} ms, {w} of {M}, load {os.getloadavg()[0]:.1f}')
