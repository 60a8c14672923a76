"""In-process interleaved A/B of graph83's five cuts at --size 100000: per round, one warm
compile_plan with the base versions patched in (A: InstanceTable.column copying,
derived_each without the disjointness test, _owner_paths sweeping every column,
registries_holding and stamp_columns._sweep making their per-row lists) and one
with this tree's (B), order alternating; gc disabled during each compile, as the bench.
Prints per round the compile's CPU time (thread_time: the machine is shared) and the
summed CPU time spent in the five functions (their calls wrapped alike in A and B), then the
medians and the B - A differences."""
from __future__ import annotations

import gc
import statistics
import sys
import time
from itertools import compress, repeat
from operator import contains, getitem, is_, or_

from derivgraph import planner
from derivgraph.compiler import graph as graph_module
from derivgraph.compiler import owners as owners_module
from derivgraph.compiler import stamp_columns
from derivgraph.compiler.instances import InstanceTable
from derivgraph.paths import MODULE_REGISTRIES
from derivgraph.runtime import accessors
from derivgraph.tools.bench_scaling import scaling_model, scaling_spec

size = int(sys.argv[1]) if len(sys.argv) > 1 else 100000
rounds = int(sys.argv[2]) if len(sys.argv) > 2 else 6


def column_a(self, k):
    return list(self.cols[k]) if self._n else []


def derived_each_a(self, ids):
    ids = list(ids)
    held_sets = [id_set for _, id_set, _ in self._held]
    if held_sets and len(ids) > len(self._derived) + sum(map(len, held_sets)):
        every = set(self._derived)
        every.update(*held_sets)
        return list(map(every.__contains__, ids))
    found = list(map(self._derived.__contains__, ids))
    for id_set in held_sets:
        held = list(map(id_set.__contains__, ids))
        if any(held):
            found = list(map(or_, found, held))
    return found


def owner_paths_a(rest, columns):
    paths = set(map(planner._OWNER_PATH, map(planner._FIRST, rest)))
    rows = set()
    for column in columns:
        rows.update(column)
    paths.update(map(planner._FIRST, map(str.rpartition, rows, repeat("."))))
    return paths


def registries_holding_a(owners, key, reads=None):
    if not owners or (key.startswith("__") and key.endswith("__")):
        return None
    if reads is None:
        reads = owners_module.RegistryReads()
    reads.take(owners)
    if not reads.modules:
        return None
    for k in range(len(MODULE_REGISTRIES)):
        found = reads.registry(k)
        held = list(map(contains, found, repeat(key)))
        if all(held):
            return k, found
        if any(held):
            return None
    dicts = reads.dicts
    return (len(MODULE_REGISTRIES), dicts) if all(map(contains, dicts, repeat(key))) \
        else None


def sweep_a(dicts, check):
    part, n = check.part, len(dicts)
    got = [None] * n
    done = [False] * n
    for registry in MODULE_REGISTRIES:
        held = list(map(registry, dicts))
        has = list(map(contains, held, repeat(part)))
        if not any(has):
            continue
        if all(has) and not any(done):
            got = list(map(getitem, held, repeat(part)))
            break
        for i in compress(range(n), has):
            if not done[i]:
                got[i], done[i] = held[i][part], True
    cls, shape, stride, dtype, device = check.layout
    ok = list(map(is_, map(type, got), repeat(cls)))
    if all(ok) and stamp_columns._all_layout(got, shape, stride, dtype, device):
        return got
    rows, sub = list(compress(range(n), ok)), list(compress(got, ok))
    result = [None] * n
    for i, tensor, good in zip(rows, sub, stamp_columns._layout_ok(sub, shape, stride, dtype,
                                                                   device), strict=True):
        if good:
            result[i] = tensor
    return result


B = (InstanceTable.column, graph_module.DerivedGraph.derived_each, planner._owner_paths,
     accessors.registries_holding, stamp_columns._sweep)
A = (column_a, derived_each_a, owner_paths_a, registries_holding_a, sweep_a)
NAMES = ("column", "derived_each", "_owner_paths", "registries_holding", "_sweep")
spent = [0.0]
each = [0.0] * len(NAMES)


def timed(f, at):
    def g(*args):
        t = time.thread_time()
        try:
            return f(*args)
        finally:
            dt = time.thread_time() - t
            spent[0] += dt
            each[at] += dt
    return g


def use(fs):
    InstanceTable.column = timed(fs[0], 0)
    graph_module.DerivedGraph.derived_each = timed(fs[1], 1)
    planner._owner_paths = timed(fs[2], 2)
    accessors.registries_holding = timed(fs[3], 3)
    stamp_columns._sweep = timed(fs[4], 4)


spec = scaling_spec()
planner.compile_plan(scaling_model(size // 4), [spec])
got: dict[str, list[tuple[float, float]]] = {"A": [], "B": []}
per: dict[str, list[list[float]]] = {"A": [], "B": []}
for r in range(rounds):
    for name in (("A", "B") if r % 2 == 0 else ("B", "A")):
        use(A if name == "A" else B)
        model = scaling_model(size // 4)
        gc.collect()
        gc.disable()
        spent[0] = 0.0
        each[:] = [0.0] * len(NAMES)
        t = time.thread_time()
        planner.compile_plan(model, [spec])
        total = time.thread_time() - t
        gc.enable()
        got[name].append((total, spent[0]))
        per[name].append(list(each))
        print(f"round {r} {name} compile {total:.3f} s  in the five {spent[0] * 1e3:.1f} ms",
              flush=True)
        del model
for name in "AB":
    print(name, "median compile", f"{statistics.median(t for t, _ in got[name]):.3f}",
          "median in the five", f"{statistics.median(s for _, s in got[name]) * 1e3:.1f} ms")
print("B - A compile (median of per-round pairs)",
      f"{statistics.median(b[0] - a[0] for a, b in zip(got['A'], got['B'])) * 1e3:+.1f} ms",
      "in the five",
      f"{statistics.median(b[1] - a[1] for a, b in zip(got['A'], got['B'])) * 1e3:+.1f} ms")
for k, fname in enumerate(NAMES):
    print(f"  {fname}: A {statistics.median(e[k] for e in per['A']) * 1e3:.1f} ms,"
          f" B {statistics.median(e[k] for e in per['B']) * 1e3:.1f} ms")
