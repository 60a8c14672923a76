"""In-process A/B (interleaved): 100k ``DerivedNode`` s made as ``_derived_columns`` makes
them (one map per declaration column), by the class (an instance ``__dict__``, the base)
against a slotted copy of it (the same ``__init__`` and ``kind`` with ``__slots__`` of its
fields, so only the slots differ). Measured and dropped: no gain on Python 3.11.
usage: PYTHONPATH=. python3 benchmarks/results/build69/micro_nodes.py [PAIRS]"""
import gc
import os
import statistics
import sys
import time
from itertools import repeat

from derivgraph.compiler.bind import match_specs
from derivgraph.compiler.graph import DerivedNode, tensor_kind
from derivgraph.compiler.resolve import devices_of
from derivgraph.tools.bench_scaling import scaling_model, scaling_spec

pairs = int(sys.argv[1]) if len(sys.argv) > 1 else 21
spec = scaling_spec()
bounds = match_specs(scaling_model(25000), [spec])
paths = [b.module_path for b in bounds]
params = [{} for _ in bounds]
Base = DerivedNode
Slotted = type("DerivedNode", (), {"__slots__": tuple(DerivedNode.__dataclass_fields__),
                                   "__init__": DerivedNode.__init__, "kind": DerivedNode.kind})
assert not hasattr(Slotted(paths[0] + ".x", bounds[0], spec.derived[0], paths[0]), "__dict__")


def make(cls: type) -> tuple[float, list]:
    t = time.perf_counter()
    columns = [list(map(cls, [p + "." + decl.name for p in paths], bounds, repeat(decl), paths,
                        repeat(None), devices_of(bounds, decl, {}), params, repeat(None),
                        repeat(tensor_kind(decl))))
               for decl in spec.derived]
    return time.perf_counter() - t, columns


gc.disable()  # as compile_plan runs
a, b = [], []
for _ in range(pairs):
    dt, kept_a = make(Base)
    a.append(dt)
    dt, kept_b = make(Slotted)
    b.append(dt)
    del kept_a, kept_b
    gc.collect()
print(f"nodes {4 * len(bounds)}  dict (base) median {statistics.median(a) * 1e3:.2f} ms  "
      f"slots median {statistics.median(b) * 1e3:.2f} ms  "
      f"{sum(y < x for x, y in zip(a, b))} of {pairs}  load {os.getloadavg()[0]:.2f}")
