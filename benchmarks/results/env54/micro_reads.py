"""In-process micro A/B of the source read in ``_record_startup`` (env54): ``map(reader.get)``
against ``reader.get_each`` on a warm reader, and ``map(address_of)`` against ``data_ptrs``,
over the scaling model's 50k source paths at 100k derived tensors. Process s, min of N.

    PYTHONPATH=TREE python benchmarks/results/env54/micro_reads.py 100000 15
"""
import gc
import sys
import time

from derivgraph.addresses import address_of, data_ptrs
from derivgraph.compiler.owners import PathReader
from derivgraph.tools.bench_scaling import scaling_model

size, rounds = int(sys.argv[1]), int(sys.argv[2])
model = scaling_model(size // 4)
paths = [f"layers.{i}.{n}" for i in range(size // 4) for n in ("scale", "weight")]
reader = PathReader(model)
reader.owners([p.rpartition(".")[0] for p in paths])  # warm, as adoption leaves it
gc.disable()


def best(fn):
    times = []
    for _ in range(rounds):
        t = time.process_time()
        fn()
        times.append(time.process_time() - t)
    return min(times)


arms = {"get": lambda: dict(zip(paths, map(reader.get, paths)))}
if hasattr(reader, "get_each"):
    arms["get_each"] = lambda: dict(zip(paths, reader.get_each(paths)))
tensors = list(map(reader.get, paths))
arms["address_of"] = lambda: list(map(address_of, tensors))
arms["data_ptrs"] = lambda: data_ptrs(tensors)
for name, fn in arms.items():
    print(f"{name:12s} {best(fn):.4f}")  # noqa: T201
