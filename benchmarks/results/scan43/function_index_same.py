import ast, time, sys, importlib.util
from derivgraph.audit.static.sources import collect_files
import derivgraph.audit.static.scope as SC
spec = importlib.util.spec_from_file_location("base_scope", "/tmp/base_scan43/derivgraph/audit/static/scope.py")
B = importlib.util.module_from_spec(spec); sys.modules["base_scope"] = B; spec.loader.exec_module(B)
files = collect_files((), "vllm")
funcs = []
for s in files:
    try:
        t = ast.parse(s.path.read_text())
    except SyntaxError:
        continue
    funcs += [n for n in ast.walk(t) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda))]
print(len(funcs))
def digest(fi):
    return ([id(c) for c in fi.calls], list(fi.site_calls.items()) and [(k, [id(c) for c in v]) for k, v in fi.site_calls.items()])
for rep in range(2):
    t = time.process_time(); a = [SC.FunctionIndex.of(f) for f in funcs]; print("new", time.process_time() - t)
    t = time.process_time(); b = [B.FunctionIndex.of(f) for f in funcs]; print("old", time.process_time() - t)
print("same", all(digest(x) == digest(y) for x, y in zip(a, b)), sum(len(x.calls) for x in a), sum(len(x.site_calls) for x in a))
