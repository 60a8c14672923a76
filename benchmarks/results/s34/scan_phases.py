"""Wall and CPU of one in-process scan of vLLM, by phase (parent and forked children).

    cd TREE && PYTHONPATH=TREE python3 /path/to/benchmarks/results/s34/scan_phases.py
"""
import time, sys, resource
t0=time.perf_counter()
import derivgraph.audit.static.scan as S
t_imp=time.perf_counter()-t0
times={}
def wrap(mod,name):
    f=getattr(mod,name)
    def w(*a,**k):
        s=time.perf_counter(); c=time.process_time(); ch=resource.getrusage(resource.RUSAGE_CHILDREN).ru_utime
        r=f(*a,**k)
        if hasattr(r,'__next__'): pass
        times.setdefault(name,[]).append((round(time.perf_counter()-s,2), round(time.process_time()-c,2), round(resource.getrusage(resource.RUSAGE_CHILDREN).ru_utime-ch,2)))
        return r
    setattr(mod,name,w)
for n in ["tree_facts","_context","_run","resolve_forwarded","_mark_built_once","mark_reload_skipped","skip_set","apply_evidence","mirror_forwarded","collect_files","default_specs","SpecIndex"]:
    wrap(S,n)
s=time.perf_counter()
r=S.scan(package="vllm")
print("import",round(t_imp,2),"scan wall",round(time.perf_counter()-s,2),"findings",len(r.findings))
ru=resource.getrusage(resource.RUSAGE_SELF); rc=resource.getrusage(resource.RUSAGE_CHILDREN)
print("self user",ru.ru_utime,"children user",rc.ru_utime)
for k,v in times.items(): print(k,v)
