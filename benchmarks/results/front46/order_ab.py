"""In-process A/B of ``Graph.order(blocks)`` on one built stamped 100k graph: the base
tree's ``ir`` module vs this tree's (with ``order_roots_tie.patch`` applied when measured),
9 alternating rounds, collector off; asserts both orders are equal.

    PYTHONPATH= python order_ab.py   (trees: /tmp/base_front46, /work/wt/front46)
"""
import gc, time, sys, importlib
def load(tree):
    for m in [m for m in sys.modules if m.startswith("derivgraph")]: del sys.modules[m]
    sys.path.insert(0, tree); ir = importlib.import_module("derivgraph.compiler.ir"); sys.path.remove(tree)
    for m in [m for m in sys.modules if m.startswith("derivgraph")]: del sys.modules[m]
    return ir
base, mine = load("/tmp/base_front46"), load("/work/wt/front46")
sys.path.insert(0, "/work/wt/front46")
from derivgraph.compiler.bind import check_bindings, match_specs
from derivgraph.compiler.build import build_graph
from derivgraph.compiler.layers import closed_layers, row_blocks
from derivgraph.tools.bench_scaling import scaling_model, scaling_spec
model = scaling_model(25000); bound = match_specs(model, [scaling_spec()]); check_bindings(bound)
g = build_graph(model, bound)
blocks = row_blocks(g, closed_layers(g))
res = {}; t = {"base": [], "mine": []}
for i in range(9):
    for tag, ir in (("base", base), ("mine", mine)) if i % 2 == 0 else (("mine", mine), ("base", base)):
        gr = ir.Graph(); gr.nodes = g.ir.nodes; gr.users = g.ir.users
        gc.disable(); s = time.process_time(); res[tag] = gr.order(blocks); t[tag].append(time.process_time() - s); gc.enable()
assert res["base"] == res["mine"]
import statistics
print({k: round(statistics.median(v), 4) for k, v in t.items()}, sum(a < b for a, b in zip(t["mine"], t["base"])), "of 9")
