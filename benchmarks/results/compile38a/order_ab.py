import gc, time, statistics
from derivgraph.compiler.bind import match_specs
from derivgraph.compiler.build import build_graph
from derivgraph.compiler.ir import Graph
from derivgraph.compiler.layers import closed_layers, row_blocks
from derivgraph.tools.bench_scaling import scaling_model, scaling_spec
model = scaling_model(25000)
graph = build_graph(model, match_specs(model, [scaling_spec()]))
gc.disable()
res = {"plain": [], "blocks": [], "closed": [], "row_blocks": []}
for r in range(7):
    graph.layer_cache = (-1, None)
    t = time.process_time(); tables = closed_layers(graph); res["closed"].append(time.process_time() - t)
    t = time.process_time(); blocks = row_blocks(graph, tables); res["row_blocks"].append(time.process_time() - t)
    g = Graph(); g.nodes = graph.nodes; g.version = 1
    t = time.process_time(); a = g.order(); res["plain"].append(time.process_time() - t)
    g = Graph(); g.nodes = graph.nodes; g.version = 1
    t = time.process_time(); b = g.order(blocks); res["blocks"].append(time.process_time() - t)
    assert a == b
for k, v in res.items():
    print(k, round(statistics.median(v), 4), [round(x, 3) for x in v])
