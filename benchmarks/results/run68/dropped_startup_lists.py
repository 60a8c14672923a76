import time, statistics as st, os
from itertools import compress, repeat
from operator import attrgetter, is_not
from derivgraph import planner
from derivgraph.addresses import AtAddresses
from derivgraph.tools.bench_scaling import scaling_model, scaling_spec
spec=scaling_spec(); plan=planner.compile_plan(scaling_model(25000),[spec])
values=plan.entries.by_id
_S=attrgetter('storage'); _P=attrgetter('startup_ptr'); _D=attrgetter('startup_data')
def old():
    kept = [e for e in values.values() if e.startup_data is not None]
    return [e.storage for e in kept], [e.startup_ptr for e in kept]
def new():
    kept = [e for e in values.values() if e.startup_data is not None]
    return list(map(_S, kept)), list(map(_P, kept))
def new2():
    vals=list(values.values())
    kept = list(compress(vals, map(is_not, map(_D, vals), repeat(None))))
    return list(map(_S, kept)), list(map(_P, kept))
a=old(); assert a==new() and a[1]==new2()[1]
for nm,f in [('map getters',new),('compress+getters',new2)]:
    A=[];B=[];w=0;M=31
    for i in range(M):
        t=time.perf_counter(); old(); x=time.perf_counter()-t
        t=time.perf_counter(); f(); y=time.perf_counter()-t
        A.append(x);B.append(y);w+=y<x
    print(f'startup_addresses lists ({len(a[0])} of {len(values)}): listcomps {st.median(A)*1e3:.2f} ms, {nm} {st.median(B)*1e3:.2f} ms; new faster {w} of {M}')
print('load', os.getloadavg()[0])
