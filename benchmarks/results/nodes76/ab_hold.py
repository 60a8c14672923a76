"""In-process A/B of the piece nodes76 changed, interleaved rounds: putting 200k held nodes
(8 columns of 25k rows, as the 100k scaling compile's 24,999 stamped layers) into a graph's
nodes, the base way (a HeldNode per row, ``dict.update``) and this tree's (``Nodes.hold``: ids
and columns only), then the young collection that walks what it made. Process time (the
machine is shared). usage: PYTHONPATH=. python3 ab_hold.py ROUNDS"""
import gc
import json
import os
import statistics
import sys
import time
from itertools import chain

from derivgraph.compiler.ir import HeldLeaves, Node, NodeKind, Nodes

ROWS, WIDTH = 25000, 8
clock = time.process_time


def columns():
    cols = [HeldLeaves([f"layers.{r}.d{k}" for r in range(ROWS)], NodeKind.DERIVED)
            for k in range(WIDTH)]
    ids = list(chain.from_iterable(zip(*[c.ids for c in cols])))
    return cols, ids, set(ids)


def base(cols, ids, id_set):
    held = [c.nodes(NodeKind.DERIVED) for c in cols]
    nodes: dict[str, Node] = {}
    nodes.update(zip(ids, chain.from_iterable(zip(*held))))
    return nodes


def mine(cols, ids, id_set):
    for c in cols:
        c.hold(NodeKind.DERIVED)
    nodes = Nodes()
    nodes.hold(ids, cols, id_set)
    return nodes


def one(fn):
    args = columns()
    gc.collect()
    gc.disable()
    t0 = clock()
    kept = fn(*args)
    t1 = clock()
    young = len(gc.get_objects(0))
    gc.collect(0)
    t2 = clock()
    gc.enable()
    assert len(kept) == ROWS * WIDTH
    return t1 - t0, t2 - t1, young


rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 10
out = {"base": [], "mine": []}
for i in range(rounds):
    for tag in (("base", "mine") if i % 2 == 0 else ("mine", "base")):
        out[tag].append(one(base if tag == "base" else mine))
for tag, rows in out.items():
    hold, walk, young = (statistics.median(x) for x in zip(*rows))
    print(json.dumps({"tag": tag, "hold_s": round(hold, 4), "gc0_s": round(walk, 4),
                      "young": int(young), "rounds": rounds}))
b, m = out["base"], out["mine"]
print(json.dumps({"mine_lower_hold": sum(y[0] < x[0] for x, y in zip(b, m)),
                  "mine_lower_total": sum(y[0] + y[1] < x[0] + x[1] for x, y in zip(b, m)),
                  "load1": os.getloadavg()[0]}))
