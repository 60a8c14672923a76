import ast, time, sys, importlib.util
from derivgraph.audit.static.sources import collect_files
import derivgraph.audit.static.handoff as H
def load(name, path):
    spec = importlib.util.spec_from_file_location(name, path)
    m = importlib.util.module_from_spec(spec); sys.modules[name] = m; spec.loader.exec_module(m); return m
BW = load("base_walk", "/tmp/base_scan43/derivgraph/audit/static/walk.py")
nodes = []
for s in collect_files((), "vllm"):
    try:
        t = ast.parse(s.path.read_text())
    except SyntaxError:
        continue
    nodes += [n for n in ast.walk(t) if isinstance(n, (ast.stmt, ast.expr))]
def old_calls(node):
    stack = [node]
    while stack:
        n = stack.pop()
        if isinstance(n, ast.Lambda):
            continue
        if isinstance(n, ast.Call):
            yield n
        stack.extend(BW.children(n))
print(len(nodes), "statement and expression roots")
for rep in range(2):
    t = time.process_time(); a = [[id(x) for x in H._calls(n)] for n in nodes]; t1 = time.process_time() - t
    t = time.process_time(); b = [[id(x) for x in old_calls(n)] for n in nodes]; t2 = time.process_time() - t
    print(f"_calls scan43 {t1:.2f}s base {t2:.2f}s same={a == b}")
