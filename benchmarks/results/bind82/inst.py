import gc, sys, time
from derivgraph.planner import compile_plan
from derivgraph.tools.bench_scaling import scaling_model, scaling_spec
from derivgraph.runtime import storage as S
from derivgraph.runtime.entry import ColumnRows
size = int(sys.argv[1]); spec = scaling_spec()
compile_plan(scaling_model(size // 4), [spec])
orig_bv, orig_one = S.Bindings.bound_values if hasattr(S,'Bindings') else None, None
cls = [c for c in vars(S).values() if isinstance(c, type) and 'bound_values' in vars(c)][0]
ob, oo = cls.bound_values, cls._one_table
def bv(self, refs, missing=None):
    refs = list(refs); t = time.perf_counter(); r = ob(self, refs, missing)
    first_in = bool(refs) and refs[0] in self.entries
    cols = [(len(c.ids), type(c.entries).__name__, c.ids == refs, c.ids[:1], ) for _, c in (self._table.rows if self._table is not None else ())]
    print(f"bv n={len(refs)} first={refs[:1]} last={refs[-1:]} first_in={first_in} t={1000*(time.perf_counter()-t):.2f}ms table={'none' if self._table is None else len(self._table.rows)}")
    return r
def one(self, refs, missing):
    hit = self._table is not None and any(type(c.entries) is ColumnRows and c.ids == refs for _, c in self._table.rows)
    print(f"   one n={len(refs)} colhit={hit}")
    return oo(self, refs, missing)
cls.bound_values, cls._one_table = bv, one
import traceback
model = scaling_model(size // 4)
plan = compile_plan(model, [spec])
