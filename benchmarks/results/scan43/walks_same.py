import ast, time, sys, importlib.util
from derivgraph.audit.static.sources import collect_files
import derivgraph.audit.static.walk as W
import derivgraph.audit.static.handoff as H
def load(name, path):
    spec = importlib.util.spec_from_file_location(name, path)
    m = importlib.util.module_from_spec(spec); sys.modules[name] = m; spec.loader.exec_module(m); return m
BW = load("base_walk", "/tmp/base_scan43/derivgraph/audit/static/walk.py")
files = collect_files((), "vllm")
nodes = []
for s in files:
    try:
        t = ast.parse(s.path.read_text())
    except SyntaxError:
        continue
    nodes += [n for n in ast.walk(t) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.stmt, ast.Lambda))]
print(len(nodes))
ok = True
for kw in ({}, {"breadth_first": True}, {"with_root": True}, {"nested": (ast.Lambda,)}):
    t = time.process_time(); a = [[id(x) for x in W.own_nodes(n, **kw)] for n in nodes]; t1 = time.process_time() - t
    t = time.process_time(); b = [[id(x) for x in BW.own_nodes(n, **kw)] for n in nodes]; t2 = time.process_time() - t
    print("own_nodes", kw, round(t1, 2), round(t2, 2), a == b); ok &= a == b
# handoff._calls reference: the old one with children
def old_calls(node):
    stack = [node]
    while stack:
        n = stack.pop()
        if isinstance(n, ast.Lambda):
            continue
        if isinstance(n, ast.Call):
            yield n
        stack.extend(BW.children(n))
t = time.process_time(); a = [[id(x) for x in H._calls(n)] for n in nodes]; t1 = time.process_time() - t
t = time.process_time(); b = [[id(x) for x in old_calls(n)] for n in nodes]; t2 = time.process_time() - t
print("calls", round(t1, 2), round(t2, 2), a == b); ok &= a == b
print("ALL SAME", ok)
