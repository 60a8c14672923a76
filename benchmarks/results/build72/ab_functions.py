"""In-process interleaved A/B of build72's cuts one function at a time, on one 100k build
(25,000 scaling layers): A the base's code of the function (``d4e0747f``, read from a base
tree, swapped in by ``__code__``), B this tree's; each repeat times A then B or B then A
alternately (process time), and checks both give equal results.

* ``derived_each (order)``: adoption's call, every id of the graph order (225k) while the run
  is held; ``derived_each (probe)``: the column proof's, each row's ``scale`` path;
* ``closed_layers``: the graph's closed tables, its cache cleared before each call.

    PYTHONPATH=. python benchmarks/results/build72/ab_functions.py /tmp/base72 25000 21
"""

from __future__ import annotations

import gc
import statistics
import sys
import time
import types
from collections.abc import Callable
from itertools import repeat
from operator import add
from typing import Any

from derivgraph.compiler import graph as graph_module
from derivgraph.compiler import layers
from derivgraph.compiler.bind import match_specs
from derivgraph.compiler.build import build_graph
from derivgraph.tools.bench_scaling import scaling_model, scaling_spec


def _code(path: str, qualname: str) -> types.CodeType:
    with open(path) as f:
        code = compile(f.read(), path, "exec")
    for part in qualname.split("."):
        code = next(c for c in code.co_consts
                    if isinstance(c, types.CodeType) and c.co_name == part)
    return code


def _pair(name: str, fn: Any, base: types.CodeType, call: Callable[[], Any],
          reps: int) -> None:
    """Time ``call`` with ``fn``'s code the base's (A) and this tree's (B), interleaved."""
    mine = fn.__code__
    times: dict[str, list[float]] = {"A": [], "B": []}
    got: dict[str, Any] = {}
    for r in range(reps + 1):
        for tag in ("A", "B") if r % 2 == 0 else ("B", "A"):
            fn.__code__ = base if tag == "A" else mine
            gc.collect()
            gc.disable()
            start = time.process_time()
            got[tag] = call()
            took = time.process_time() - start
            gc.enable()
            if r:  # the first round warms up
                times[tag].append(took)
    fn.__code__ = mine
    assert got["A"] == got["B"], name
    a, b = times["A"], times["B"]
    wins = sum(y < x for x, y in zip(a, b))
    print(f"{name:24s} A median {statistics.median(a) * 1e3:7.2f} ms  B median "
          f"{statistics.median(b) * 1e3:7.2f} ms  B faster {wins} of {reps}")


def main() -> None:
    base, layers_n, reps = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    spec = scaling_spec()
    model = scaling_model(layers_n)
    bound = match_specs(model, [spec])
    graph = build_graph(model, bound)
    assert graph._held
    run = bound[1:]
    each = graph_module.DerivedGraph.derived_each
    each_base = _code(f"{base}/derivgraph/compiler/graph.py", "DerivedGraph.derived_each")
    ordered = graph.ordered()
    _pair("derived_each (order)", each, each_base, lambda: graph.derived_each(ordered), reps)
    probe = list(map(add, [b.module_path for b in run], repeat(".scale")))
    _pair("derived_each (probe)", each, each_base, lambda: graph.derived_each(probe), reps)

    def closed() -> list[Any]:
        graph.layer_cache = (None, None)
        return [table.rows for table in layers.closed_layers(graph)]

    _pair("closed_layers", layers.closed_layers,
          _code(f"{base}/derivgraph/compiler/layers.py", "closed_layers"), closed, reps)
    assert graph._held  # nothing above made the held nodes


if __name__ == "__main__":
    main()
