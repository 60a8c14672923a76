import time, statistics as st, os
from derivgraph import planner
from derivgraph.tools.bench_scaling import scaling_model, scaling_spec
spec=scaling_spec(); plan=planner.compile_plan(scaling_model(25000),[spec])
sources=plan.graph.sources(); print(type(sources), len(sources), len(plan.folds.entries), sources is plan.graph.sources())
read=dict(plan.tensors.sources)
def old(): return dict(zip(sources, map(read.__getitem__, sources)))
from derivgraph.runtime.storage import _sources_of
def new(): return _sources_of(sources, None, read)
assert list(old().items())==list(new().items())
A=[];B=[];w=0;M=31
for i in range(M):
    t=time.perf_counter(); old(); x=time.perf_counter()-t
    t=time.perf_counter(); new(); y=time.perf_counter()-t
    A.append(x);B.append(y);w+=y<x
print(f'BoundTensors.bind sources ({len(sources)}): lookups {st.median(A)*1e3:.2f} ms, checked copy {st.median(B)*1e3:.2f} ms; new faster {w} of {M}; load {os.getloadavg()[0]:.2f}')
