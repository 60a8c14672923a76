"""Warm ``build_graph`` of the stamped 100k model, N rounds (gc disabled as in
``compile_plan``): per round its time / ``_check_cycles``' (ms); run once per tree."""

import gc
import sys
import time

from derivgraph.compiler import build
from derivgraph.compiler.bind import match_specs
from derivgraph.compiler.stamp import stamping
from derivgraph.tools.bench_scaling import scaling_model, scaling_spec

spec = scaling_spec()
check_cycles = build._check_cycles
took: list[float] = []


def timed(graph):
    t = time.perf_counter()
    check_cycles(graph)
    took.append(time.perf_counter() - t)


build._check_cycles = timed
out = []
for _ in range(int(sys.argv[1])):
    model = scaling_model(25000)
    specs = match_specs(model, [spec])
    gc.collect()
    gc.disable()
    with stamping(True):
        t = time.perf_counter()
        graph = build.build_graph(model, specs)
        t = time.perf_counter() - t
    gc.enable()
    out.append((t, took[-1]))
    del graph, model, specs
print(" ".join(f"{a * 1e3:.1f}/{b * 1e3:.1f}" for a, b in out[1:]))
