import gc, sys
import derivgraph.compiler.codegen as C
from derivgraph.planner import compile_plan
from derivgraph.tools.bench_scaling import scaling_model, scaling_spec
spec = scaling_spec()
orig = C._run_facts
def rf(em, got, values, n):
    book = C.book_of(em.ctx)
    a, b = values[:n], values[n:]
    def info(x):
        if not x: return "-"
        ad = book.addresses(x); st = book.storages(x)
        ad1 = book.addresses(x[1:]) if ad is None else ad
        return f"n={len(x)} addr={'Y' if ad is not None else ('rest' if ad1 is not None else 'N')} stor={'Y' if st is not None else 'N'} ptr_eq={ad1 is not None and all(p==t.data_ptr() for p,t in zip(ad1,x[-len(ad1):]))}"
    print("run_facts a:", info(a), "b:", info(b))
    return orig(em, got, values, n)
C._run_facts = rf
compile_plan(scaling_model(25000), [spec])
