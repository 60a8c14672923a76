"""Per-piece process times of ``build_graph`` on the stamped scaling workload (100k derived
tensors), one tree per process: the tree's own functions wrapped by name (a piece that is
absent in a tree is not printed). Run it alternating, base tree then this tree:

    PYTHONPATH=TREE python pieces.py TREE [ROUNDS]
"""

from __future__ import annotations

import functools
import gc
import sys
import time
from typing import Any

sys.path.insert(0, sys.argv[1])
from derivgraph.compiler import (  # noqa: E402
    bind,
    build,
    instances,
    replay,
    stamp,
    stamp_params,  # noqa: E402
)
from derivgraph.compiler import graph as graph_module  # noqa: E402
from derivgraph.tools import bench_scaling as scaling  # noqa: E402

times: dict[str, float] = {}


def wrap(owner: Any, name: str) -> None:
    fn = getattr(owner, name, None)
    if fn is None:
        return

    @functools.wraps(fn)
    def timed(*args: Any, **kwargs: Any) -> Any:
        start = time.process_time()
        try:
            return fn(*args, **kwargs)
        finally:
            times[name] = times.get(name, 0.0) + time.process_time() - start

    setattr(owner, name, timed)


for owner, name in [(stamp.Stamper, "resolve_bound"), (replay.Replay, "run_rows"),
                    (stamp.Stamper, "_replay_run"), (build, "_derived_columns"),
                    (graph_module.DerivedGraph, "add_derived_all"),
                    (graph_module.DerivedGraph, "place_input_each"),
                    (stamp.Stamper, "_prove"), (instances, "consistent_rows"),
                    (build, "infer_shapes"), (build, "_check_cycles"),
                    (stamp_params.ParamStamper, "resolve"),
                    (graph_module.DerivedGraph, "add_made"),
                    (graph_module.DerivedGraph, "is_fresh")]:
    wrap(owner, name)

for _ in range(int(sys.argv[2]) if len(sys.argv) > 2 else 3):
    model = scaling.scaling_model(25000)
    bound = bind.match_specs(model, [scaling.scaling_spec()])
    bind.check_bindings(bound)
    gc.collect()
    gc.disable()
    times.clear()
    start = time.process_time()
    graph = build.build_graph(model, bound)
    total = time.process_time() - start
    gc.enable()
    print(f"build_graph {total:.3f}", " ".join(f"{k}={v:.3f}" for k, v in times.items()),
          flush=True)
    del graph, model, bound
