"""In-process A/B of prep66's two compile-path changes on the 100k stamped scaling plan.

* ``checks``: the address checks `Plan.prepare` builds for the startup tensors and the holders'
  storages. base: the startup check by its own listcomp and full check (exact compare, then its
  words read), then the table's; mine: the table's, then the startup check's words taken from
  the table's (`BoundTensors.take_startup_words`). Asserts that both arms' startup words are
  equal (the same words at the same places, the same expected bytes).
* ``sources``: `DerivedGraph.sources()`: base: one sweep of every node's kind; mine: the kept
  list's copy (its upkeep in `add_made` is measured by the whole compile, not here).
Arms alternate (order reversed every other round); medians and N of M printed.
usage: PYTHONPATH=. python benchmarks/results/prep66/checks_ab.py [ROUNDS]
"""
import gc
import os
import statistics
import sys
import time

import numpy as np

from derivgraph import planner
from derivgraph.addresses import AtAddresses
from derivgraph.compiler.ir import NodeKind
from derivgraph.tools.bench_scaling import scaling_model, scaling_spec

rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 15
plan = planner.compile_plan(scaling_model(25000), [scaling_spec()])
tensors, table, graph = plan.tensors, plan.holders.table, plan.graph


def base_checks() -> AtAddresses:
    kept = [e for e in tensors.entries.values() if e.startup_data is not None]
    startup = AtAddresses([e.storage for e in kept], [e.startup_ptr for e in kept])
    assert startup.intact()
    table._at = None
    assert table.at_startup_addresses()
    return startup


def mine_checks() -> AtAddresses:
    tensors._startup = None
    table._at = None
    assert table.at_startup_addresses()
    assert tensors.take_startup_words(table.addresses(), table.entries)
    return tensors.startup_addresses()


def words(at: AtAddresses) -> tuple:
    w = at.words
    return (w._expected, (w._impls.ctypes.data + 8 * w._impl_index).tolist(),
            (w._stores.ctypes.data + 8 * w._store_index).tolist(), [id(t) for t in w.tensors])


assert words(base_checks()) == words(mine_checks())  # the same words, places and bytes


def base_sources() -> list:
    source = NodeKind.SOURCE
    return [n for n, d in graph.ir.nodes.items() if d.kind is source]


def mine_sources() -> list:
    return graph.sources()


assert base_sources() == mine_sources()
gc.collect()
gc.disable()
for name, arms in (("checks", (base_checks, mine_checks)),
                   ("sources", (base_sources, mine_sources))):
    times: dict[str, list[float]] = {"base": [], "mine": []}
    for r in range(rounds):
        order = (("base", arms[0]), ("mine", arms[1]))
        for arm, fn in (order if r % 2 == 0 else order[::-1]):
            start = time.perf_counter()
            fn()
            times[arm].append(time.perf_counter() - start)
    wins = sum(m < b for b, m in zip(times["base"], times["mine"]))
    print(f"{name}: base {statistics.median(times['base']) * 1e3:.2f} ms, "
          f"mine {statistics.median(times['mine']) * 1e3:.2f} ms, mine lower {wins} of {rounds}"
          f" (load {os.getloadavg()[0]:.2f})")
print("startup tensors", len(tensors.startup_addresses()), "table", len(table),
      "sources", len(graph.sources()), "np", np.__version__)
