"""Spike (not the compiler): what (b3) of rows39/DESIGN.md saves in graph building once the
bookkeeping a real row record needs is paid, against rows39's spike (no bookkeeping at all).

Times ``build_graph`` up to the end of resolution (the derived-node loop, the stamper;
``_check_cycles`` and what follows cut off) on the stamped scaling workload, three ways,
alternating rounds, process seconds:

* ``nodes (today)``: the compiler as it is;
* ``names only (rows39 spike)``: a replayed row's sources and ops write no ``ir.Node`` and no
  users, a derived tensor no node (rows39's ``spike_rows_no_nodes.py``, ported to this tree's
  ``place_source``);
* ``record (b3 as needed)``: the same, but paying what (b3) must keep: every lazily written
  node's id in a membership dict (``row_of``: a later ``source`` call must find the path, a
  lookup must build the node), its constructor arguments kept (a tuple per node: what a lazy
  ``Node`` is built from, and a touched row written as nodes at its span), and the users'
  lists of every input (a shared constant's users decide ``lower._only_feeds_views``).

    PYTHONPATH=TREE python3 spike_b3_bookkeeping.py [--size 100000] [--rounds 5]
"""

from __future__ import annotations

import argparse
import gc
import time
from typing import Any

from derivgraph.compiler import build, stamp
from derivgraph.compiler import graph as graph_mod
from derivgraph.compiler.bind import match_specs
from derivgraph.tools.bench_scaling import scaling_model, scaling_spec

parser = argparse.ArgumentParser()
parser.add_argument("--size", type=int, default=100000)
parser.add_argument("--rounds", type=int, default=5)
args = parser.parse_args()


class _Stop(Exception):
    pass


def _stop(graph: Any) -> None:
    raise _Stop


DG = graph_mod.DerivedGraph
orig = {"add_derived": DG.add_derived, "place_input": DG.place_input,
        "place_source": DG.place_source, "op_keyed": DG.op_keyed,
        "_replay": stamp.Stamper._replay}
state = {"replay": False, "book": False, "replays": 0}


def add_derived(self: Any, node: Any) -> None:
    self.derived[node.id] = node
    if state["book"]:
        self.row_of[node.id] = None
        self.users.setdefault(node.id, [])


def place_input(self: Any, node: Any, value_id: str) -> None:
    node.input = value_id
    if state["book"]:
        self.users.setdefault(value_id, []).append(node.id)


def place_source(self: Any, path: str, tensor: Any, layout: Any = None) -> bool:
    if not state["replay"]:
        return orig["place_source"](self, path, tensor, layout)
    if path in self.derived or path in self.ir.nodes or (state["book"] and path in self.row_of):
        return True
    self.read_sources[path] = tensor
    if state["book"]:
        self.row_of[path] = (path, layout)
        self.users.setdefault(path, [])
    return False


def op_keyed(self: Any, name: str, a: Any, kw: Any, key: Any, refs: list[str]) -> str:
    if not state["replay"]:
        return orig["op_keyed"](self, name, a, kw, key, refs)
    hit = self._cse.get(key)
    if hit is not None:
        self.cse_hits += 1
        return hit
    self._op_count += 1
    node_id = self._cse[key] = f"%{self._op_count}:{name}"
    if state["book"]:
        inputs = tuple(dict.fromkeys(refs))
        self.row_of[node_id] = (node_id, name, a, kw, inputs)
        users = self.users
        users.setdefault(node_id, [])
        for ref in inputs:
            users.setdefault(ref, []).append(node_id)
    return node_id


def _replay(self: Any, *a: Any) -> None:
    state["replay"] = True
    state["replays"] += 1
    try:
        orig["_replay"](self, *a)
    finally:
        state["replay"] = False


def patched(mode: str) -> None:
    on = mode != "nodes (today)"
    state["book"] = mode == "record (b3 as needed)"
    for name, fn in (("add_derived", add_derived), ("place_input", place_input),
                     ("place_source", place_source), ("op_keyed", op_keyed)):
        setattr(DG, name, fn if on else orig[name])
    stamp.Stamper._replay = _replay if on else orig["_replay"]


init = DG.__init__


def init_with_rows(self: Any, model: Any) -> None:
    init(self, model)
    self.row_of = {}
    self.users = self.ir.users


DG.__init__ = init_with_rows
build._check_cycles = _stop
spec = scaling_spec()
gc.disable()
modes = ["nodes (today)", "names only (rows39 spike)", "record (b3 as needed)"]
results: dict[str, list[float]] = {m: [] for m in modes}
for r in range(args.rounds + 1):
    for mode in modes:
        model = scaling_model(args.size // 4)
        bound = match_specs(model, [spec])
        patched(mode)
        state["replays"] = 0
        start = time.process_time()
        try:
            build.build_graph(model, bound)
        except _Stop:
            pass
        took = time.process_time() - start
        patched("nodes (today)")
        assert mode == modes[0] or state["replays"] == args.size // 4 - 1, (mode, state)
        if r:  # the first round warms up
            results[mode].append(took)
        del model, bound
        gc.collect()
for mode, times in results.items():
    print(f"{mode:28s} median {sorted(times)[len(times) // 2]:.3f} s  "  # noqa: T201
          f"all {[round(t, 3) for t in times]}")
