import time, statistics as st, ctypes, numpy as np, random
from derivgraph import dict_versions as dv
from derivgraph.dict_versions import _TAG_OFFSET, _WORD
def old(dicts):
    addresses = [id(d) for d in dicts]
    low = min(addresses)
    words = (max(addresses) - low + _TAG_OFFSET) // _WORD + 1
    span = (ctypes.c_int64 * words).from_address(low)
    view = np.frombuffer(span, dtype=np.int64)
    index = np.array([(a - low + _TAG_OFFSET) // _WORD for a in addresses], dtype=np.intp)
    return view, index
class M: pass
objs=[M() for _ in range(25000)]
for o in objs: o.x=1
dicts=[o.__dict__ for o in objs]; random.shuffle(dicts)
va,ia=old(dicts); vb,ib=dv._views(dicts)
assert ia.dtype==ib.dtype and (ia==ib).all() and va.shape==vb.shape and va.ctypes.data==vb.ctypes.data
A=[];B=[];wins=0
for i in range(41):
    t=time.perf_counter(); old(dicts); a=time.perf_counter()-t
    t=time.perf_counter(); dv._views(dicts); b=time.perf_counter()-t
    A.append(a);B.append(b);wins+=b<a
print(f'_views 25k dicts: old {st.median(A)*1e3:.2f} ms new {st.median(B)*1e3:.2f} ms, new faster {wins} of 41')
import os; print('load', os.getloadavg())
