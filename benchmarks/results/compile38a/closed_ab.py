import gc, time, statistics, sys
from derivgraph.compiler.bind import match_specs
from derivgraph.compiler.build import build_graph
from derivgraph.compiler import layers
from derivgraph.tools.bench_scaling import scaling_model, scaling_spec
model = scaling_model(25000)
graph = build_graph(model, match_specs(model, [scaling_spec()]))
gc.disable()
assert getattr(layers, "_users_as_template", lambda *a: True)(graph.ir.users, graph.stamps[0])
res = []
for r in range(7):
    graph.layer_cache = (-1, None)
    t = time.process_time(); tables = layers.closed_layers(graph); res.append(time.process_time() - t)
print("closed_layers", round(statistics.median(res), 4), [round(x, 3) for x in res], len(tables[0].rows))
