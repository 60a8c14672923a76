import time, statistics as st, os, torch
from derivgraph import planner
from derivgraph.runtime import flat_copy
from derivgraph.column_layout import ColumnLayout
from derivgraph.tools.bench_scaling import scaling_model, scaling_spec
spec=scaling_spec(); plan=planner.compile_plan(scaling_model(25000),[spec])
rt=plan._refill_table; table=plan.holders.table
ours=rt.storages
recs={}
records=[recs.setdefault((s.dtype,tuple(s.shape)), ColumnLayout(torch.Tensor,s.dtype,s.shape,s.device,True)) for s in ours]
at=table.addresses(); assert at.proven()
def B():
    ptrs=list(map(at.ptrs.__getitem__, rt.index)) if at.proven() else None
    return flat_copy.flat_runs(ours, rt.spans, records, ptrs)
def A():
    return flat_copy.flat_runs(ours, rt.spans, records)
fa=A(); fb=B()
assert [(a,b,c.starts.tolist(),c.rows.shape,c.rows.ctypes.data) for a,b,c in fa]==[(a,b,c.starts.tolist(),c.rows.shape,c.rows.ctypes.data) for a,b,c in fb]
As=[];Bs=[];w=0;M=21
for i in range(M):
    t=time.perf_counter(); A(); a=time.perf_counter()-t
    t=time.perf_counter(); B(); b=time.perf_counter()-t
    As.append(a);Bs.append(b);w+=b<a
print(f'flat_runs over the 75k refill targets (20 runs): read ptrs {st.median(As)*1e3:.1f} ms, proven ptrs {st.median(Bs)*1e3:.1f} ms; B faster {w} of {M}; load {os.getloadavg()[0]:.2f}')
