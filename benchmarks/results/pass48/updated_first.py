"""Process time of the first and the second ``plan.run(updated=[one source])`` after a stamped
100k compile (the first builds the partial pass; the second reuses it), tree on PYTHONPATH.

    PYTHONPATH=TREE python3 updated_first.py LABEL
"""

import gc
import json
import sys
import time

from derivgraph.compiler.stamp import stamping
from derivgraph.planner import compile_plan
from derivgraph.tools.bench_scaling import scaling_model, scaling_spec

spec = scaling_spec()
compile_plan(scaling_model(250), [spec])  # warm-up
with stamping(True):
    plan = compile_plan(scaling_model(25000), [spec])
gc.collect()
gc.disable()
out = {"label": sys.argv[1]}
for key in ("first", "second"):
    start = time.process_time()
    plan.run(updated=["layers.7.scale"])
    out[key] = round(time.process_time() - start, 4)
print(json.dumps(out))  # noqa: T201
