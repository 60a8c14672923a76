"""In-process A/B of the sweeps the lazy nodes change, on one built stamped scaling graph per
tree (base tree vs this one, alternating, collector off): ``sources()`` and the order's walk
(``Graph.order`` with the closed rows' blocks) recomputed, and the number of lazy nodes made
by a whole compile.

    python sweeps_ab.py BASE_TREE THIS_TREE [--size 100000] [--rounds 7] > sweeps_ab.txt
"""

from __future__ import annotations

import argparse
import gc
import importlib
import statistics
import sys
import time
from typing import Any


def load(tree: str) -> dict[str, Any]:
    for name in [m for m in sys.modules if m == "derivgraph" or m.startswith("derivgraph.")]:
        del sys.modules[name]
    sys.path.insert(0, tree)
    try:
        mods = {n: importlib.import_module(f"derivgraph.{n}") for n in (
            "compiler.bind", "compiler.build", "compiler.layers", "tools.bench_scaling")}
    finally:
        sys.path.remove(tree)
    for name in [m for m in sys.modules if m == "derivgraph" or m.startswith("derivgraph.")]:
        del sys.modules[name]
    return mods


def once(tree: dict[str, Any], size: int) -> dict[str, float]:
    scaling, bind = tree["tools.bench_scaling"], tree["compiler.bind"]
    model = scaling.scaling_model(max(1, size // 4))
    bound = bind.match_specs(model, [scaling.scaling_spec()])
    bind.check_bindings(bound)
    gc.collect()
    gc.disable()
    try:
        graph = tree["compiler.build"].build_graph(model, bound)
        layers = tree["compiler.layers"]
        out = {}
        graph.ir.version += 1
        start = time.process_time()
        graph.sources()
        out["sources"] = time.process_time() - start
        blocks = layers.row_blocks(graph, layers.closed_layers(graph))
        start = time.process_time()
        graph.ir.order(blocks)
        out["order(blocks)"] = time.process_time() - start
    finally:
        gc.enable()
    return out


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("base")
    parser.add_argument("mine")
    parser.add_argument("--size", type=int, default=100000)
    parser.add_argument("--rounds", type=int, default=7)
    args = parser.parse_args()
    trees = {"base": load(args.base), "mine": load(args.mine)}
    got: dict[str, list[dict[str, float]]] = {"base": [], "mine": []}
    for i in range(args.rounds):
        for tag in (("base", "mine") if i % 2 == 0 else ("mine", "base")):
            got[tag].append(once(trees[tag], args.size))
            print(tag, i, {k: round(v, 4) for k, v in got[tag][-1].items()}, flush=True)
    print(f"\nmedians over {args.rounds} rounds (process s), size {args.size}")
    for key in got["base"][0]:
        b = statistics.median(r[key] for r in got["base"])
        m = statistics.median(r[key] for r in got["mine"])
        wins = sum(rm[key] < rb[key] for rb, rm in zip(got["base"], got["mine"]))
        print(f"{key:16s} base {b:.4f}  mine {m:.4f}  delta {m - b:+.4f}  "
              f"mine faster in {wins} of {args.rounds}")


if __name__ == "__main__":
    main()
