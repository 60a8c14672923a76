"""Micro: ``facts_hold`` of the scaling template's four facts on another layer (us per call,
best of 5 x 100k calls). Run once per tree:

    PYTHONPATH=<tree> python facts_micro.py >> facts_micro.txt
"""

import sys
import timeit

from derivgraph.compiler.bind import match_specs
from derivgraph.compiler.reads import Reads, probe_derived, probe_path
from derivgraph.compiler.stamp import facts_hold
from derivgraph.tools.bench_scaling import scaling_model, scaling_spec


class _Graph:
    derived: dict = {}


bounds = match_specs(scaling_model(3), [scaling_spec()])
reads = Reads()
for probe, args in [(probe_path, (("scale",),)), (probe_derived, ("scale",)),
                    (probe_path, (("weight",),)), (probe_derived, ("weight",))]:
    reads.note(probe, args, probe(_Graph, bounds[0], {}, *args)[0])
assert facts_hold(_Graph, reads, bounds[1], {}) is not None
n = 100000
best = min(timeit.repeat(lambda: facts_hold(_Graph, reads, bounds[1], {}), number=n, repeat=5))
print(f"{sys.path[0] or '.'}: {best / n * 1e6:.2f} us per facts_hold")
