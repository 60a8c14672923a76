"""What the per-row objects of a 100k stamped compile cost to make, measured alone (medians
of 7, one process): 100k ``DerivedNode`` made as ``build._derived_columns`` makes them (one
``map`` over the constructor) against the same fields set by C-level ``setattr`` sweeps on
bare instances; 100k ``Entry`` as ``adoption_columns.allocated_rows`` makes them against the
same by sweeps. The sweeps lose on Python 3.11 (its specialized ``__init__`` calls are the
cheapest way to make an object): only not making the objects saves their cost."""
import statistics
import timeit
from collections import deque
from itertools import repeat

import torch

from derivgraph.compiler.graph import DerivedNode
from derivgraph.paths import Slot
from derivgraph.runtime.entry import Entry
from derivgraph.spec.kinds import TensorKind

n = 100000
ids = [f"layers.{i}.x" for i in range(n)]
paths = [f"layers.{i}" for i in range(n)]
devices = [torch.device("cpu") for _ in range(n)]
params = [{} for _ in range(n)]
decl, bounds, kind = object(), [object()] * n, TensorKind.ATTRIBUTE
NEW = object.__new__


def nodes_init() -> list[DerivedNode]:
    return list(map(DerivedNode, ids, bounds, repeat(decl), paths, repeat(None), devices,
                    params, repeat(None), repeat(kind)))


def nodes_swept() -> list[DerivedNode]:
    nodes = list(map(NEW, repeat(DerivedNode, n)))
    for name, column in (("id", ids), ("bound", bounds), ("decl", repeat(decl)),
                         ("owner_path", paths), ("input", repeat(None)), ("device", devices),
                         ("params", params), ("meta", repeat(None)), ("_kind", repeat(kind))):
        deque(map(setattr, nodes, repeat(name), column), 0)
    return nodes


made = nodes_init()


def entries_init() -> list[Entry]:
    return list(map(Entry, made, repeat(None), repeat(Slot.ATTRIBUTE), repeat(False)))


def entries_swept() -> list[Entry]:
    entries = list(map(NEW, repeat(Entry, n)))
    for name, column in (("node", made), ("storage", repeat(None)),
                         ("slot", repeat(Slot.ATTRIBUTE)), ("adopted", repeat(False)),
                         ("startup_ptr", repeat(0)), ("startup_data", repeat(None))):
        deque(map(setattr, entries, repeat(name), column), 0)
    return entries


assert nodes_init() == nodes_swept()
for fn in (nodes_init, nodes_swept, entries_init, entries_swept):
    times = timeit.repeat(fn, number=1, repeat=7)
    print(f"{fn.__name__:14s} 100k: median {statistics.median(times)*1e3:.1f} ms, "
          f"min {min(times)*1e3:.1f} ms")
