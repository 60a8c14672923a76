import time, statistics as st, os
import operator
from itertools import compress, count, repeat
class accessors:  # the variant tried (not committed)
    @staticmethod
    def by_name(names):
        distinct = dict.fromkeys(names)
        if len(distinct) <= 8 and set(map(type, names)) <= {str}:
            return {name: list(compress(count(), map(operator.eq, names, repeat(name))))
                    for name in distinct}
        raise AssertionError
def old(names):
    groups = {}
    for i, name in enumerate(names):
        groups.setdefault(name, []).append(i)
    return groups
cases={'50k sources, 2 names':[n for _ in range(25000) for n in (f'w{_}'[:1]+'eight','scale')],
       '25k, 4 names':[n for _ in range(6250) for n in ('inv','prod','strides','alias')],
       '200 names x 1':[f'n{i}' for i in range(200)]}
out=[]
for k,names in cases.items():
    names=[str(''.join(n)) for n in names]  # fresh str objects
    assert accessors.by_name(names)==old(names) and list(accessors.by_name(names))==list(old(names))
    A=[];B=[];w=0;M=31
    for i in range(M):
        t=time.perf_counter(); old(names); a=time.perf_counter()-t
        t=time.perf_counter(); accessors.by_name(names); b=time.perf_counter()-t
        A.append(a);B.append(b);w+=b<a
    out.append(f'by_name {k}: loop {st.median(A)*1e3:.2f} ms, sweeps {st.median(B)*1e3:.2f} ms; new faster {w} of {M}')
print('\n'.join(out)); print('load', os.getloadavg()[0])
