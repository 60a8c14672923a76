"""One stamped 100k ``build_graph`` (the scaling workload, 25k layers x 4 derived), its process
CPU seconds as one JSON line; run alternately on two trees by ``build_ab.sh``.

    PYTHONPATH=TREE python3 build_ab.py TAG
"""

import gc
import json
import sys
import time

from derivgraph.compiler.bind import match_specs
from derivgraph.compiler.build import build_graph
from derivgraph.compiler.stamp import stamping
from derivgraph.tools.bench_scaling import scaling_model, scaling_spec

spec, model = scaling_spec(), scaling_model(25000)
bound = match_specs(model, [spec])
gc.collect()
t = time.process_time()
with stamping(True):
    graph = build_graph(model, bound)
cpu = time.process_time() - t
assert graph.stamped == 24999 and not graph.issues
print(json.dumps({"tag": sys.argv[1], "build_graph_cpu": round(cpu, 4)}))  # noqa: T201
