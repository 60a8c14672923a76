"""Each scan21e fast path against its former code (kept in the tests), vLLM 0.33.0: CPU s."""
import ast
import gc
import importlib.util
import pathlib
import re
import time

import vllm

from derivgraph.audit.static.config_reader import _keeper
from derivgraph.audit.static.construction import construction_sites
from derivgraph.audit.static.property_chains import lineage_chains
from derivgraph.audit.static.scope import FunctionIndex
from derivgraph.audit.static.walk import children
from tests.audit.static import test_static_scan_fast_paths as t


def cpu(f):
    """Best of 3 runs, the cyclic collector off (as in the scan)."""
    gc.collect()
    gc.disable()
    best = float("inf")
    for _ in range(3):
        t0 = time.process_time()
        f()
        best = min(best, time.process_time() - t0)
    gc.enable()
    return round(best, 3)


_spec = importlib.util.spec_from_file_location("base_walk", "/tmp/base_scan21e/derivgraph/audit/"
                                               "static/walk.py")
base_walk = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(base_walk)
t._reference_children = base_walk.children  # the former walk.children (9c61c38)


root = pathlib.Path(vllm.__file__).parent
texts = [p.read_text() for p in sorted(root.rglob("*.py"))]
trees = [ast.parse(x) for x in texts[::8]]
nodes = [n for tr in trees for n in ast.walk(tr)]
funcs = [n for n in nodes if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))]
print("children", len(nodes), "nodes: new", cpu(lambda: [children(n) for n in nodes]),
      "former", cpu(lambda: [t._reference_children(n) for n in nodes]))
print("FunctionIndex.of", len(funcs), "functions: new",
      cpu(lambda: [FunctionIndex.of(f) for f in funcs]),
      "former", cpu(lambda: [t._reference_index(f) for f in funcs]))
names = set(re.findall(r"^class (\w+)", "\n".join(texts[::50]), re.M))
print("construction_sites", len(names), "names: new", cpu(lambda: construction_sites(texts, names)),
      "former", cpu(lambda: t._reference_sites(texts, names)))
chains = {f"C{i % 400}.p{i}": f"o.f{i}" for i in range(1200)}
lineages = [tuple(f"C{(i * 7 + k) % 500}" for k in range(4)) for i in range(2640)]
print("lineage_chains", len(lineages), "lineages: new",
      cpu(lambda: [lineage_chains(chains, ln) for ln in lineages]),
      "former", cpu(lambda: [t._reference_chains(chains, ln) for ln in lineages]))
files = [(str(i), x) for i, x in enumerate(texts)]
kinds = frozenset({"QuantizationConfig"})
print("_keeper: new", cpu(lambda: _keeper(files, kinds, lambda c: frozenset({c}))),
      "former", cpu(lambda: t._reference_keeper(files, kinds, lambda c: frozenset({c}))))
