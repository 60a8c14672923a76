import gc, sys, traceback
from derivgraph.planner import compile_plan
from derivgraph.tools.bench_scaling import scaling_model, scaling_spec
import derivgraph.column_layout as cl
C = cl.ColumnLayouts
log = []
orig_common, orig_of, orig_add, orig_admit = C.common, C.of, C.add, C.admit
def where():
    f = sys._getframe(2); return f"{f.f_code.co_filename.split('derivgraph/')[-1]}:{f.f_lineno}"
def common(self, t):
    col = self._columns.get(id(t[0])) if t else None
    path = "col" if col is not None and (col[0] is t or len(col[0])==len(t) and all(a is b for a,b in zip(t,col[0]))) else "other"
    r = orig_common(self, t); log.append(("common", len(t), path, where(), r is not None)); return r
def of(self, t):
    log.append(("of", len(t), where())); return orig_of(self, t)
def add(self, t, l, **k):
    log.append(("add", len(t), where(), k, l.contiguous)); return orig_add(self, t, l, **k)
def admit(self, t, l):
    r = orig_admit(self, t, l); log.append(("admit", where(), r)); return r
C.common, C.of, C.add, C.admit = common, of, add, admit
spec = scaling_spec()
n = int(sys.argv[1])
plan = compile_plan(scaling_model(n // 4), [spec])
for x in log: print(x)
