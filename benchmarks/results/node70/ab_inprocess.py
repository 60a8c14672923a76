"""In-process A/B of node70's held derived columns on the 100k scaling compile.

A: the run's derived nodes made eagerly (``build._derived_columns`` as on the base, every
node made and added with ``add_derived_all``, its columns lists of nodes); B: this tree (the
columns held, :class:`~derivgraph.compiler.graph.HeldDerived`). Interleaved A, B, A, B ...
on fresh models; per round the warm ``compile_plan`` and ``build_graph`` inside it.
usage: PYTHONPATH=. python3 benchmarks/results/node70/ab_inprocess.py [LAYERS] [ROUNDS]
"""

from __future__ import annotations

import gc
import json
import os
import statistics
import sys
import time
from itertools import chain, repeat
from operator import add, attrgetter, is_

from torch import nn

from derivgraph import planner
from derivgraph.compiler import build
from derivgraph.compiler.graph import DerivedNode, tensor_kind
from derivgraph.compiler.resolve import device_of
from derivgraph.tools.bench_scaling import scaling_model, scaling_spec

HELD = build._derived_columns
_module, _module_path = attrgetter("module"), attrgetter("module_path")


def eager_columns(graph, bounds, params, decls, plain):  # type: ignore[no-untyped-def]
    """The base's ``_derived_columns``: every node made at once (the A side)."""
    modules = list(map(_module, bounds))
    cls = type(modules[0])
    if any(decl.owner for decl, _ in decls) or not issubclass(cls, nn.Module) \
            or not all(map(is_, map(type, modules), repeat(cls))):
        return None
    paths = list(map(_module_path, bounds))
    ids = [list(map(add, paths, repeat("." + decl.name))) for decl, _ in decls]
    every = list(chain.from_iterable(zip(*ids)))
    fresh = set(every)
    if len(fresh) != len(every) or not graph.derived_ids.isdisjoint(fresh):
        return None
    devices: dict = {}
    for decl, _ in decls:
        if decl.device not in devices:
            devices[decl.device] = list(map(device_of, bounds, repeat(decl), repeat(plain)))
    columns = [list(map(DerivedNode, column, bounds, repeat(decl), paths, repeat(None),
                        devices[decl.device], params, repeat(None), repeat(tensor_kind(decl))))
               for column, (decl, _) in zip(ids, decls, strict=True)]
    rows = list(map(list, zip(*columns))) if columns else [[] for _ in bounds]
    graph.add_derived_all(list(chain.from_iterable(rows)), every, ids, fresh)
    return all(c == [c[0]] * len(c) for c in devices.values()), (columns, ids), rows


def compile_once(side: str, layers: int) -> tuple[float, float]:
    rows_of: dict = {}
    if side == "A":
        def patched(graph, bounds, params, decls, plain):  # type: ignore[no-untyped-def]
            made = eager_columns(graph, bounds, params, decls, plain)
            if made is None:
                return None
            rows_of["rows"] = made[2]
            return made[0], made[1]
        build._derived_columns = patched
        held_run = build.HeldRun
        # the rows the layers get: A's node lists (the base's), not a HeldRun
        build.HeldRun = lambda columns, first: _Rows(rows_of, first)  # type: ignore
    model, spec = scaling_model(layers), scaling_spec()
    built = []
    real_build = planner.build_graph

    def timed_build(*args):  # type: ignore[no-untyped-def]
        t = time.perf_counter()
        g = real_build(*args)
        built.append(time.perf_counter() - t)
        return g
    planner.build_graph = timed_build
    gc.collect()
    try:
        t = time.perf_counter()
        planner.compile_plan(model, [spec])
        total = time.perf_counter() - t
    finally:
        planner.build_graph = real_build
        build._derived_columns = HELD
        if side == "A":
            build.HeldRun = held_run
    return total, built[0]


class _Rows:
    """A's rows: ``zip(bounds, run, repeat(...))`` gets this once; the layers list then
    holds the same object per row, so A swaps it for each row's list below."""

    def __init__(self, rows_of: dict, first: int) -> None:
        self.rows_of, self.first = rows_of, first


def _unwrap_layers() -> None:
    """Make build_graph's layers list hold A's node lists (the base's) in place of _Rows."""
    real = build.Stamper

    class Stamper(real):  # type: ignore[misc, valid-type]
        def __init__(self, graph, resolve, layers=(), *args, **kwargs):  # type: ignore
            fixed = []
            for bound, params, nodes in layers:
                if type(nodes) is _Rows:
                    nodes = nodes.rows_of["rows"][len(fixed) - nodes.first]
                fixed.append((bound, params, nodes))
            layers[:] = fixed
            super().__init__(graph, resolve, layers, *args, **kwargs)
    build.Stamper = Stamper


def main() -> None:
    layers = int(sys.argv[1]) if len(sys.argv) > 1 else 25000
    rounds = int(sys.argv[2]) if len(sys.argv) > 2 else 7
    _unwrap_layers()
    compile_once("A", 500)
    compile_once("B", 500)  # warm-up
    got: dict[str, list[tuple[float, float]]] = {"A": [], "B": []}
    load0 = os.getloadavg()
    for r in range(rounds):
        for side in ("AB" if r % 2 == 0 else "BA"):
            got[side].append(compile_once(side, layers))
    load1 = os.getloadavg()
    wins = sum(b[0] < a[0] for a, b in zip(got["A"], got["B"]))
    wins_build = sum(b[1] < a[1] for a, b in zip(got["A"], got["B"]))
    out = {"layers": layers, "rounds": rounds, "load": [load0, load1],
           "A": got["A"], "B": got["B"]}
    for side in "AB":
        print(f"{side}: compile median {1000 * statistics.median(t for t, _ in got[side]):.1f} "
              f"ms (min {1000 * min(t for t, _ in got[side]):.1f}), build_graph median "
              f"{1000 * statistics.median(b for _, b in got[side]):.1f} ms "
              f"(min {1000 * min(b for _, b in got[side]):.1f})")
    print(f"B faster: compile {wins} of {rounds}, build_graph {wins_build} of {rounds}; "
          f"load {load0[0]:.2f} -> {load1[0]:.2f}")
    print(json.dumps(out))


if __name__ == "__main__":
    main()
