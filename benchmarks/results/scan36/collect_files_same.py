import os, sys, time, importlib.util
from pathlib import Path
new = __import__("derivgraph.audit.static.sources", fromlist=["x"])
spec = importlib.util.spec_from_file_location("oldsources", "/tmp/base_scan36/derivgraph/audit/static/sources.py")
old = importlib.util.module_from_spec(spec); spec.loader.exec_module(old)
cases = [((), "vllm"), ((), "derivgraph"), (("tests/audit",), None), ((".",), None), (("derivgraph/audit/static/scan.py",), None),
         (("/work/wt/scan36/derivgraph/spec",), None), (("./derivgraph/../derivgraph/cli",), None), (("derivgraph/cli/",), None)]
for paths, pkg in cases:
    a = old.collect_files(paths, pkg); b = new.collect_files(paths, pkg)
    print(paths, pkg, len(a), a == b)
os.chdir("/tmp")
for paths in [("/work/wt/scan36/derivgraph/cli",), ("..",)]:
    a = old.collect_files(paths); b = new.collect_files(paths); print(paths, len(a), a == b)
for f in (old, new):
    t = time.process_time(); [f.collect_files((), "vllm") for _ in range(5)]; print((time.process_time() - t) / 5)
