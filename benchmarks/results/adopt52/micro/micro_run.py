import gc, sys, time, operator
from itertools import compress
import torch
import derivgraph.planner as planner
from derivgraph.column_layout import ColumnLayouts
from derivgraph.compiler.columns import evaluate_columns
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent.parent))
from stamped_plan import evaluation_inputs  # noqa: E402
graph, sources = evaluation_inputs(100000)
orig = planner._evaluate_all
gc.disable()
_INPUT = operator.attrgetter("input")
for rep in range(3):
    interp = planner.CompileValues(graph, dict(sources))
    env, derived = interp.env, graph.derived
    evaluate_columns(graph, env, interp.source_at, ColumnLayouts())
    order = graph.ordered()
    t = [time.perf_counter()]
    todo = list(compress(order, map(operator.not_, map(env.__contains__, order)))); t.append(time.perf_counter())
    held = list(compress(todo, map(derived.__contains__, todo))); t.append(time.perf_counter())
    inputs = list(map(_INPUT, map(derived.__getitem__, held))); t.append(time.perf_counter())
    ready = list(map(env.__contains__, inputs)); t.append(time.perf_counter())
    env.update(zip(compress(held, ready), map(env.__getitem__, compress(inputs, ready)))); t.append(time.perf_counter())
    todo = list(compress(todo, map(operator.not_, map(env.__contains__, todo)))); t.append(time.perf_counter())
    for node_id in todo:
        decl = derived.get(node_id)
        if decl is not None and decl.input is not None:
            env[node_id] = env[decl.input]
        else:
            env[node_id] = interp.run_node(graph.nodes[node_id])
    t.append(time.perf_counter())
    print(len(order), len(todo), sum(ready), [round(b - a, 4) for a, b in zip(t, t[1:])])
