"""Spike (not the compiler): what stage 2 of DESIGN.md saves in graph building when a stamped
row writes no ``ir.Node`` (its derived tensors, sources and ops kept as names only).

Times ``build_graph`` up to the end of resolution (the derived-node loop and the stamper;
``_check_cycles`` and shape inference are cut off) on the stamped scaling workload, as the
compiler does it and with the graph's node writes replaced by name bookkeeping for every
replayed (stamped) layer and every derived tensor: ``ir.Graph.add`` of a derived tensor, of a
source or op made during a replay, and ``Graph.set_inputs`` are skipped; the CSE table, the
``derived`` dict and the replay itself run as before. Alternating rounds, process seconds.

    PYTHONPATH=TREE python3 spike_rows_no_nodes.py [--size 100000] [--rounds 5]
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
parser.add_argument("--only", choices=["all", "derived", "replay"], default="all",
                    help="skip the derived tensors' nodes, the replayed sources' and ops', or both")
args = parser.parse_args()


class _Stop(Exception):
    pass


def _stop(graph: Any) -> None:
    raise _Stop


def _front(model: Any, bound: list[Any]) -> float:
    start = time.process_time()
    try:
        build.build_graph(model, bound)
    except _Stop:
        pass
    return time.process_time() - start


DG = graph_mod.DerivedGraph
orig = {"add_derived": DG.add_derived, "set_input": DG.set_input, "source": DG.source,
        "op_keyed": DG.op_keyed, "_replay": stamp.Stamper._replay}
state = {"replay": False, "replays": 0}


def add_derived(self: Any, node: Any) -> None:  # the row record keeps the names only
    self.derived[node.id] = node


def set_input(self: Any, node: Any, value_id: str) -> None:
    node.input = value_id


def source(self: Any, path: str, tensor: Any, layout: Any = None) -> Any:
    if not state["replay"]:
        return orig["source"](self, path, tensor, layout)
    self.read_sources[path] = tensor
    return graph_mod.NodeRef(path)


def op_keyed(self: Any, name: str, a: Any, kw: Any, key: Any, refs: list[str]) -> str:
    if not state["replay"]:
        return orig["op_keyed"](self, name, a, kw, key, refs)
    hit = self._cse.get(key)
    if hit is not None:
        self.cse_hits += 1
        return hit
    self._op_count += 1
    node_id = self._cse[key] = f"%{self._op_count}:{name}"
    return node_id


def _replay(self: Any, *a: Any) -> None:
    state["replay"] = True
    state["replays"] += 1
    try:
        orig["_replay"](self, *a)
    finally:
        state["replay"] = False


def patched(on: bool) -> None:
    derived = [("add_derived", add_derived), ("set_input", set_input)]
    replay = [("source", source), ("op_keyed", op_keyed)]
    parts = {"all": derived + replay, "derived": derived, "replay": replay}[args.only]
    for name, fn in parts:
        setattr(DG, name, fn if on else orig[name])
    stamp.Stamper._replay = _replay if on else orig["_replay"]


build._check_cycles = _stop
spec = scaling_spec()
gc.disable()
results: dict[str, list[float]] = {"nodes (today)": [], "rows as names (spike)": []}
for r in range(args.rounds + 1):
    for label, on in (("nodes (today)", False), ("rows as names (spike)", True)):
        model = scaling_model(args.size // 4)
        bound = match_specs(model, [spec])
        patched(on)
        state["replays"] = 0
        took = _front(model, bound)
        patched(False)
        assert not on or state["replays"] == args.size // 4 - 1, state  # all but one stamped
        if r:  # the first round warms up
            results[label].append(took)
        del model, bound
        gc.collect()
for label, times in results.items():
    print(f"{label:24s} median {sorted(times)[len(times) // 2]:.3f} s  "  # noqa: T201
          f"all {[round(t, 3) for t in times]}")
