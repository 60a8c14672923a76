import time, ast, sys
import derivgraph.audit.static.evidence as E
import derivgraph.audit.static.readers as RD
import derivgraph.audit.static.config_reader as CR
import derivgraph.audit.static.selection as SEL
import derivgraph.audit.static.source_tree as ST
import derivgraph.audit.static.scan as S
spent = {}
def timed(name, fn):
    def inner(*a, **k):
        c = time.process_time()
        try:
            return fn(*a, **k)
        finally:
            spent[name] = spent.get(name, 0.0) + time.process_time() - c
    return inner
E.apply_evidence = timed("apply_evidence", E.apply_evidence); S.apply_evidence = E.apply_evidence
E._judge = timed("_judge", E._judge)
E._on_cpu = timed("_on_cpu", E._on_cpu)
E.kept_handoffs = timed("kept_handoffs", E.kept_handoffs)
E.handed_tree = timed("handed_tree", E.handed_tree)
E.config_reader = timed("config_reader", E.config_reader)
RD.ReaderIndex._word_files = timed("_word_files", RD.ReaderIndex._word_files)
RD.ReaderIndex.prefetch = timed("prefetch", RD.ReaderIndex.prefetch)
RD.ReaderIndex.reader = timed("reader", RD.ReaderIndex.reader)
ST.ast = type(sys)("fa"); ST.ast.__dict__.update(ast.__dict__); ST.ast.parse = timed("source_tree.parse", ast.parse)
CR.serving_classes = timed("serving_classes", CR.serving_classes)
c = time.process_time()
S.scan(package="vllm", jobs=1)
print("total", round(time.process_time() - c, 2))
for k, v in sorted(spent.items(), key=lambda kv: -kv[1]):
    print(f"  {k:24s} {v:.3f}")
