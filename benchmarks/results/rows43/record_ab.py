"""The three front-half readers rows43 moved to the rows' record, on one built stamped 100k
graph (25k layers), each with the record (this tree's rule) against the same code with the
record taken away (which is the base ``c6ddaea`` rule, node by node), alternating, 7 rounds,
process CPU seconds:

* closed proof (``closed_layers``, uncached): the ids checked against the record
  (``consistent_rows``) / without a record, ``aligned_rows`` + the distinct-ids check;
* ``source_deps`` (uncached): closed rows by position / the walk over every node (the proof
  not current);
* shape inference's stamped run (``infer._run_stamped``): the rows' source layouts from
  ``InstanceTable.layouts`` / every row's sources read (the layouts emptied).

Both sides give the same answers (asserted).

    PYTHONPATH=TREE python3 record_ab.py
"""

import gc
import time
from collections.abc import Callable
from typing import Any

from derivgraph.compiler import infer, layers
from derivgraph.compiler.bind import match_specs
from derivgraph.compiler.build import build_graph
from derivgraph.compiler.stamp import stamping
from derivgraph.tools.bench_scaling import scaling_model, scaling_spec

spec, model = scaling_spec(), scaling_model(25000)
gc.disable()
with stamping(True):
    graph = build_graph(model, match_specs(model, [spec]))
[table] = graph.stamps
base_path, layouts = table.base, dict(table.layouts)


def closed(record: bool) -> Any:
    table.base = base_path if record else ""
    graph.layer_cache = (-1, None)
    try:
        return [t.rows for t in layers.closed_layers(graph)]
    finally:
        table.base = base_path


def deps(record: bool) -> Any:
    graph.layer_cache = (-1, None)
    layers.closed_layers(graph)  # current: the rows by position (not timed: see run())
    if not record:
        graph.layer_cache = (-1, None)
    graph._deps_version = -1
    return graph.source_deps()


def meta(record: bool) -> Any:
    graph.layer_cache = (-1, None)
    layers.closed_layers(graph)
    table.layouts.clear()
    table.layouts.update(layouts if record else {})
    interp = infer._StampedMeta(graph, {})
    out = infer._run_stamped(graph, interp)
    table.layouts.update(layouts)
    return out.rest, {k: (v.shape, v.dtype) for k, v in interp.env.items()}


def run(fn: Callable[[bool], Any], record: bool) -> float:
    if fn is deps:  # the proof outside the timing
        graph.layer_cache = (-1, None)
        layers.closed_layers(graph)
        graph._deps_version = -1
        if not record:
            graph.layer_cache = (-1, None)
        t = time.process_time()
        graph.source_deps()
        return time.process_time() - t
    t = time.process_time()
    fn(record)
    return time.process_time() - t


for fn in (closed, deps, meta):
    assert fn(True) == fn(False), fn.__name__
res: dict[str, list[float]] = {}
for _ in range(7):
    for fn in (closed, deps, meta):
        for record in (False, True):
            res.setdefault(f"{fn.__name__:7s} {'record' if record else 'base  '}", []).append(
                run(fn, record))
for k, v in res.items():
    print(f"{k} median {sorted(v)[3]:.3f}  all {[round(x, 3) for x in v]}")  # noqa: T201
