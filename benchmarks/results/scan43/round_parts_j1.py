import time, ast, sys
import derivgraph.audit.static.module as M
import derivgraph.audit.static.segments as SG
import derivgraph.audit.static.rules as R
import derivgraph.audit.static.scope as SC
import derivgraph.audit.static.scan as S
spent = {}
depth = [0]
def timed(name, fn):
    def inner(*a, **k):
        c = time.process_time()
        try:
            return fn(*a, **k)
        finally:
            spent[name] = spent.get(name, 0.0) + time.process_time() - c
    return inner
M.parse_relevant = timed("parse_relevant", M.parse_relevant)
SG.ast = type(sys)("fakeast"); SG.ast.__dict__.update(ast.__dict__); SG.ast.parse = timed("segments.ast.parse", ast.parse)
SG._close_textually = timed("_close_textually", SG._close_textually)
SG.split_blocks = timed("split_blocks", SG.split_blocks)
SG._ClassText.of = classmethod(timed("_ClassText.of", SG._ClassText.of.__func__))
SC.ModuleScope.reached = timed("scope.reached", SC.ModuleScope.reached)
SC.FunctionIndex.of = classmethod(timed("FunctionIndex.of", SC.FunctionIndex.of.__func__))
R.FunctionAudit.run = timed("FunctionAudit.run", R.FunctionAudit.run)
R.FunctionAudit.__init__ = timed("FunctionAudit.__init__", R.FunctionAudit.__init__)
for n in ["import_map", "audit_class_wide", "lazy_reset_sites", "audit_lazy_caches", "_externals", "handoff_roots", "dataclass_sites"]:
    setattr(M, n, timed(n, getattr(M, n)))
S._audit_one = timed("_audit_one", S._audit_one)
S.tree_facts = timed("tree_facts", S.tree_facts)
S.apply_evidence = timed("evidence", S.apply_evidence)
c = time.process_time()
S.scan(package="vllm", jobs=1)
print("total", round(time.process_time() - c, 2))
for k, v in sorted(spent.items(), key=lambda kv: -kv[1]):
    print(f"  {k:24s} {v:.3f}")
